#include "api/json_pretty.h"

#include <algorithm>

#include <boost/url/parse.hpp>

namespace dashcam::api {
namespace {

// Indentation stops growing here, which bounds the output of hostile
// nesting to a constant factor of the input.
constexpr std::size_t kMaxIndentDepth = 32;

void NewLine(std::string& out, std::size_t depth) {
  out.push_back('\n');
  out.append(2 * std::min(depth, kMaxIndentDepth), ' ');
}

// The index of the next character after `i` that is not JSON whitespace.
std::size_t SkipSpace(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

}  // namespace

std::string IndentJson(std::string_view json) {
  std::string out;
  out.reserve(json.size() * 2);
  std::size_t depth = 0;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    switch (c) {
      case ' ':
      case '\n':
      case '\r':
      case '\t':
        break;
      case '"': {
        // Copy the string through its closing quote, escapes included.
        const std::size_t start = i++;
        while (i < json.size() && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
        out.append(json.substr(start, std::min(i, json.size() - 1) - start + 1));
        break;
      }
      case '{':
      case '[': {
        const std::size_t next = SkipSpace(json, i + 1);
        if (next < json.size() && json[next] == (c == '{' ? '}' : ']')) {
          out.push_back(c);
          out.push_back(json[next]);
          i = next;
          break;
        }
        out.push_back(c);
        NewLine(out, ++depth);
        break;
      }
      case '}':
      case ']':
        if (depth > 0) --depth;
        NewLine(out, depth);
        out.push_back(c);
        break;
      case ',':
        out.push_back(c);
        NewLine(out, depth);
        break;
      case ':':
        out += ": ";
        break;
      default:
        out.push_back(c);
    }
  }
  out.push_back('\n');
  return out;
}

bool WantsPretty(std::string_view target) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return false;
  for (auto param : url->params(boost::urls::encoding_opts(true))) {
    if (param.key != "pretty") continue;
    return param.value.empty() || param.value == "true" || param.value == "1";
  }
  return false;
}

}  // namespace dashcam::api
