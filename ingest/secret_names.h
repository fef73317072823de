// Whether a field or variable name says its value is a secret.
//
// A name is split into words at punctuation, digits-to-letters changes and
// camelCase ("WANDB_API_KEY", "hf-token", "clientSecret", "HFToken" ->
// wandb api key / hf token / client secret / hf token). It is secret when a
// word (or two adjacent words) is one of: password passwd pwd passphrase
// secret credential(s) authorization apikey accesskey privatekey secretkey,
// api key, access key, private key, secret key, token.
//
// Names that only *mention* a secret are not secret, so ordinary training
// logs pass unchanged:
//   - a trailing word that describes metadata rather than the value:
//     `token_type`, `password_file`, `api_key_id`, `secret_name`,
//     `token_count`, `pad_token_id` (the last word is one of
//     kMetadataSuffixes);
//   - tokenizer vocabulary: `token` after pad/eos/bos/unk/sep/cls/mask/
//     special/max/num/... (`eos_token`, `max_token`), and the plural
//     `tokens` is never secret (`max_tokens`, `num_tokens`);
//   - the shell's working directories `PWD` and `OLDPWD` (exact case).
#pragma once

#include <string_view>

namespace dashcam::ingest {

bool IsSecretName(std::string_view name);

}  // namespace dashcam::ingest
