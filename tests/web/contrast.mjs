// WCAG contrast of rendered text, measured in the page: for every element
// matching `selector`, its text colour against its own background colour
// (the badges and placeholders the training views draw have one), as
// [{text, ratio}]. AA asks 4.5 for normal-size text.
export function contrasts(page, selector) {
  return page.locator(selector).evaluateAll((els) => {
    const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
    const lum = (c) => {
      const [r, g, b] = rgb(c).map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    return els.map((el) => {
      const style = getComputedStyle(el);
      const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
      return { text: el.textContent, ratio: +((a + 0.05) / (b + 0.05)).toFixed(2) };
    });
  });
}
