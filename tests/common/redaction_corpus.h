// Redaction corpus: text that secret redaction must leave alone, and text
// with secrets planted in it that it must mask. Shared by the redactor's unit
// tests (tests/ingest/redactor_test.cpp), its fuzz seeds and the integration
// tests, so all of them agree on what "ordinary" and "secret" mean.
//
// Ordinary lines are what training jobs really print (PyTorch, Hugging Face,
// NCCL, Jupyter, pip, docker, git, sshd): hex ids, sha256 digests, UUIDs,
// git hashes, paths, `tokens/s` throughput, tokenizer settings such as
// `max_tokens=2048`, `pad_token_id=0` or `eos_token: </s>`, `export PWD=...`.
// Redaction must return every one of them byte for byte.
//
// Planted secrets are fake but have the real shape (prefix, length,
// alphabet), so a rule that checks the shape sees a realistic value. Each
// secret is distinct and at least 12 bytes long, so a test can grep stored
// data or responses for it and be sure a hit means a leak.
//
// Thread-safety: the functions build new vectors on each call and share no
// state.
#pragma once

#include <string>
#include <vector>

namespace dashcam::testing {

// Single log lines (no newline) that contain no secret.
std::vector<std::string> OrdinaryLogLines();

// Compact JSON objects, as a shipper sends them, whose field names and
// values merely look secret-adjacent (`max_tokens`, `eos_token`,
// `token_type`, `PWD`, ...). None contains a secret.
std::vector<std::string> OrdinaryJsonDocuments();

// Redacting `text` with the default rules gives `text` with `secret`
// replaced by `[REDACTED:<rule>]` and nothing else changed; for the
// private_key rule, the whole block from -----BEGIN to the end of the
// -----END line (or to the end of a block cut short) is replaced.
struct PlantedSecret {
  std::string rule;    // the name the mask must carry: [REDACTED:<rule>]
  std::string secret;  // the bytes that must not survive; a substring of text
  std::string text;    // a log line (a PEM block spans several lines)
};

// At least one case for every default rule and every variant of it (each
// token format, header, URL form, assignment syntax, percent-encoding).
std::vector<PlantedSecret> PlantedSecrets();

}  // namespace dashcam::testing
