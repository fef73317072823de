// Credentials for tests that run the server with --auth-file: key entries
// made by the real `dashcam hash-key`, and the Base64 of Authorization
// headers.
#pragma once

#include <string>
#include <string_view>

namespace dashcam::testing {

// An --auth-file entry (YAML) for `key`, printed by the real binary's
// `hash-key` with 1000 iterations (tests verify many keys). `filter`: the
// key's --filter, none when empty. Empty when the command failed.
std::string HashKeyEntry(const std::string& id, const std::string& role, const std::string& key,
                         const std::string& filter = "");

// Standard Base64 with padding.
std::string Base64(std::string_view bytes);

}  // namespace dashcam::testing
