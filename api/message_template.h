// MessageTemplate: a log message with what varies between occurrences of
// "the same line" masked, so that lines differing only in numbers and ids
// share one template and lines with different words do not. Used by
// GET /api/v1/patterns (patterns_handler.h) to group events.
//
// Masks, each replacing one token (a run of bytes between blanks and the
// delimiters , ; ( ) [ ] { } < > " ' = | ` @):
//   <time>      2026-11-29T10:23:15.123Z, 2026-11-29, 2026/11/29, 10:23:15,
//               10:23:15.123, 01:23 (also with a trailing zone)
//   <ip>        10.0.3.7, 10.0.3.7:29500, 10.0.0.0/8, fe80::1, aa:bb:cc:dd:ee:ff
//   <uuid>      550e8400-e29b-41d4-a716-446655440000
//   <url>       https://host/..., s3://bucket/...
//   <path>      /var/log/train.log, ./ckpt/step_100.pt, ~/x, a/b/c (two or
//               more slashes); a trailing :line stays inside the path
// and inside any other token:
//   <hex>       0x7f3a..., or a run of 8+ hex digits with at least one digit
//               (git shas, CUDA pointers, container ids)
//   <num>       an integer or decimal, signed, with an exponent (5e-05),
//               including digit runs inside words (rank3 -> rank<num>,
//               gpu-node-07 -> gpu-node-<num>)
//   <duration>  a number with a time unit: 350ms, 12.5s, 3 min, 2h
//   <size>      a number with a size unit: 2.10 GiB, 512MiB, 10 KB, 3 bytes
//   <bar>       a progress bar: block characters (tqdm, rich), or the
//               content of |...| or [...] made only of bar characters
// Runs of blanks (including newlines) become one space; leading and
// trailing blanks go. Everything else is kept byte for byte, so the
// template stays readable ("Epoch <num>: <num>%|<bar>| <num>/<num> ...").
// The template ends after the token that takes it past kMaxTemplateBytes,
// with " …" appended: lines that agree up to there share a template, and
// since the cut is made on the template (not the message) two lines that
// differ only in numbers are cut at the same place.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dashcam::api {

inline constexpr std::size_t kMaxTemplateBytes = 300;

// Replaces `out` with the template of `message`. Reusing `out` across calls
// avoids an allocation per message.
void BuildMessageTemplate(std::string_view message, std::string& out);

// The template of `message`.
std::string MessageTemplate(std::string_view message);

}  // namespace dashcam::api
