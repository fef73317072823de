// Screenshots of the page's states (issue 7), written to
// $DASHCAM_SCREENSHOT_DIR, else web-screenshots in the working directory
// (ctest runs the browser tests in the build's tests directory), and listed
// in the test output as "screenshot: <path>".
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export async function screenshot(page, name) {
  const dir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);
  return path;
}
