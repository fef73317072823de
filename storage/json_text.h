// Appending JSON text: string escaping shared by the structured log and the
// API's response writer. Output is valid JSON for any input bytes: invalid
// UTF-8 is replaced by U+FFFD so a hostile log line cannot break a response.
#pragma once

#include <string>
#include <string_view>

namespace dashcam {

// Appends `s` as a quoted JSON string.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace dashcam
