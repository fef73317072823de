// Tests for secret redaction: ingest/secret_names.h (IsSecretName),
// ingest/redaction_rules.h (default rules, the YAML rules file),
// ingest/redactor.h (Redactor) and ingest/document_redactor.h, and the
// DocumentParser that applies them before a document is read.
//
// Every redaction below is also checked for idempotency (redacting the
// output again changes nothing) and for the growth bound.
#include "ingest/redactor.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "ingest/document_parser.h"
#include "ingest/document_redactor.h"
#include "ingest/redaction_rules.h"
#include "ingest/secret_names.h"
#include "storage/json_text.h"
#include "tests/common/redaction_corpus.h"
#include "tests/common/test_server.h"

namespace dashcam::ingest {
namespace {

using dashcam::testing::PlantedSecret;

std::string Redacted(std::string_view rule) {
  return "[REDACTED:" + std::string(rule) + "]";
}

std::unique_ptr<Redactor> MustCreate(const RedactionConfig& config) {
  auto r = Redactor::Create(config);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

const Redactor& Default() {
  static const std::unique_ptr<Redactor> r = MustCreate({});
  return *r;
}

// The redacted text (the input itself when nothing was masked). Checks that
// RedactText's answer matches its hits, that the output respects the growth
// bound and that redacting it again changes nothing.
std::string Redact(std::string_view in, const Redactor& r = Default(),
                   RedactionHits* hits_out = nullptr) {
  RedactionHits hits;
  std::string out = "untouched";
  if (!r.RedactText(in, out, hits)) {
    EXPECT_EQ(out, "untouched") << "out written although nothing was masked";
    EXPECT_TRUE(hits.empty());
    if (hits_out) *hits_out = hits;
    return std::string(in);
  }
  EXPECT_FALSE(hits.empty()) << in;
  EXPECT_NE(out, in) << "reported a change but returned the input";
  EXPECT_LE(out.size(), in.size() * Redactor::kMaxGrowth + 64);
  std::string again;
  RedactionHits again_hits;
  EXPECT_FALSE(r.RedactText(out, again, again_hits))
      << "not idempotent:\n  in:    " << in << "\n  once:  " << out << "\n  twice: " << again;
  if (hits_out) *hits_out = hits;
  return out;
}

std::vector<std::string> HitNames(const RedactionHits& hits, const Redactor& r = Default()) {
  std::vector<std::string> names;
  for (auto id : hits.ids()) names.push_back(r.rule_name(id));
  return names;
}

struct Case {
  std::string in;
  std::string want;
};

void ExpectRedactions(const std::vector<Case>& cases, const Redactor& r = Default()) {
  for (const auto& c : cases) EXPECT_EQ(Redact(c.in, r), c.want) << "input: " << c.in;
}

void ExpectUnchanged(const std::vector<std::string>& lines, const Redactor& r = Default()) {
  for (const auto& line : lines) {
    std::string out;
    RedactionHits hits;
    EXPECT_FALSE(r.RedactText(line, out, hits)) << "false positive:\n  " << line << "\n  " << out;
  }
}

// ---------------------------------------------------------------------------
// IsSecretName

// The space-separated words of `s`.
std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t b = 0, e; b < s.size(); b = e + 1) {
    e = std::min(s.find(' ', b), s.size());
    if (e > b) out.emplace_back(s.substr(b, e - b));
  }
  return out;
}

TEST(SecretNamesTest, SecretNames) {
  for (const auto& name :
       Words("WANDB_API_KEY HF_TOKEN AWS_SECRET_ACCESS_KEY clientSecret accessToken db_password "
             "password PASSWORD passwd DB_PWD token api_key apiKey x-api-key hf-token HFToken "
             "GITHUB_TOKEN private_key secret credentials authorization passphrase "
             "MLFLOW_TRACKING_PASSWORD id_token refresh_token secret_key access_key "
             "client_secret")) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
}

TEST(SecretNamesTest, NamesThatOnlyMentionASecret) {
  for (const auto& name :
       Words("max_tokens num_tokens tokenizer tokenizer_name token_type pad_token_id eos_token "
             "bos_token unk_token mask_token max_new_tokens api_key_id password_file secret_name "
             "token_count PWD OLDPWD tokens _ TOKENIZERS_PARALLELISM train_tokens_per_second "
             "keyboard monkey passing cwd message host.name")) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
  EXPECT_FALSE(IsSecretName(""));
}

// ---------------------------------------------------------------------------
// Default rules, one by one: positives with the exact output, negatives
// unchanged.

TEST(RedactorRulesTest, PrivateKeyBlocksAreMaskedWhole) {
  ExpectRedactions({
      {"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA3mSCHqwL9BwAn\n5M6CIRba8vDFbfAG\n"
       "-----END RSA PRIVATE KEY-----",
       Redacted("private_key")},
      {"loaded -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n"
       "-----END PRIVATE KEY----- from /etc/ssl/key.pem",
       "loaded " + Redacted("private_key") + " from /etc/ssl/key.pem"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5v\n"
       "-----END OPENSSH PRIVATE KEY-----\nnext line",
       Redacted("private_key") + "\nnext line"},
      {"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGVnWx8BCADRh3nB2p9k\n=Xk3v\n"
       "-----END PGP PRIVATE KEY BLOCK-----",
       Redacted("private_key")},
      // Cut short: masked to the end.
      {"key=-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRS",
       "key=" + Redacted("private_key")},
      // Two blocks: the text between them stays.
      {"a -----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY----- b "
       "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY----- c",
       "a " + Redacted("private_key") + " b " + Redacted("private_key") + " c"},
  });
  ExpectUnchanged({
      "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
      "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@x",
      "the private key is stored in /etc/ssl/private/key.pem",
  });
}

TEST(RedactorRulesTest, Jwt) {
  const std::string jwt =
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.QVn_PY_v-nVNJKyC0fkAqd1c1D7kJWwME5uAsga9FVo";
  ExpectRedactions({
      {jwt, Redacted("jwt")},
      {"id_token " + jwt + " expires", "id_token " + Redacted("jwt") + " expires"},
      {"Authorization: Bearer " + jwt, "Authorization: Bearer " + Redacted("jwt")},
      // An unsigned token (empty signature) is still a token.
      {"jwt eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IifQ.", "jwt " + Redacted("jwt")},
  });
  ExpectUnchanged({
      "eyJhbGciOiJIUzI1NiJ9",                    // one part: a base64 JSON header
      "theyJust.left.early",                     // not at a word start
      "eyJ.abc.def",                             // parts too short
      "payload eyJzdWIiOiJhbGljZSJ9 (decoded)",  // no dots
  });
}

TEST(RedactorRulesTest, AwsAccessKeyId) {
  ExpectRedactions({
      {"AKIAIDVWTFKTANGPVYQE", Redacted("aws_access_key_id")},
      {"key ASIA6BEMZUMLENMWFQTR expires", "key " + Redacted("aws_access_key_id") + " expires"},
      {"aws_access_key_id=AKIADX0PJAGPNRZP07CV",
       "aws_access_key_id=" + Redacted("aws_access_key_id")},
  });
  ExpectUnchanged({
      "AKIAIDVWTFKTANGPVYQ",    // 15 after the prefix
      "AKIAIDVWTFKTANGPVYQEX",  // 17: not a key id
      "XAKIAIDVWTFKTANGPVYQE",  // not at a word start
      "akiaidvwtfktangpvyqe",   // lowercase
      "AKIA is the prefix of long-term AWS access key ids",
  });
}

TEST(RedactorRulesTest, GithubTokens) {
  ExpectRedactions({
      {"ghp_B4r6bSr0pFBOPCWBRDFOxEzf5FJtRBZRAJyu", Redacted("github_token")},
      {"oauth gho_5BKaCKvsYFJGufE0w6HjwXmDMwmctuUHtirN ok",
       "oauth " + Redacted("github_token") + " ok"},
      {"u=ghu_LU09X0fmnR7n5FdmueGDmblocOKFm7BEKAT3", "u=" + Redacted("github_token")},
      {"ghs_TqFZA7oIzMc0pYJzvItJ17FO6bBlKu8y0Xx7/ghr_gslTkmH3cmPtbx0Bhc2FyLPvMGvr2Ka1YsHz",
       Redacted("github_token") + "/" + Redacted("github_token")},
      {"pat github_pat_FXQf1pjwaSyrEGVkOPntkr_ZeZsRmorPmoE5TZ9dliic8dCO9DDTZlJf0Dju5aSqdWssjo12ft"
       "Qyz0HLEv.",
       "pat " + Redacted("github_token") + "."},
      // The token inside a URL's user part.
      {"https://ghp_4AEIC3TF3teqOwfcdrQf70aqim8vw3bIe1nZ@github.com/alice/x.git",
       "https://" + Redacted("github_token") + "@github.com/alice/x.git"},
  });
  ExpectUnchanged({
      "ghp_short123",
      "ghx_B4r6bSr0pFBOPCWBRDFOxEzf5FJtRBZRAJyu",
      "github_pat_tooShort",
      "see https://github.com/pytorch/pytorch/issues/12345",
  });
}

TEST(RedactorRulesTest, HuggingFaceToken) {
  ExpectRedactions({
      {"hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g", Redacted("huggingface_token")},
      {"huggingface-cli login --token hf_KeiOLS4GMtbtK4FEzkQxYISTCguXPeGq0e --add-to-git",
       "huggingface-cli login --token " + Redacted("huggingface_token") + " --add-to-git"},
      // HF_TOKEN=hf_... names the precise kind, not the generic assignment.
      {"export HF_TOKEN=hf_H9TDeGrlepbxfHJsFtcNQKAkfGkH9tfUdC",
       "export HF_TOKEN=" + Redacted("huggingface_token")},
  });
  ExpectUnchanged({
      "hf_transfer enabled", "hf_hub_download(repo_id='gpt2')", "HF_HOME=/mnt/hf-cache",
      "hf_N7TbK47gQcpobB2OlatoaybhHitbw",  // 29 after the prefix
  });
}

TEST(RedactorRulesTest, OpenAiKey) {
  ExpectRedactions({
      {"sk-KoNy5cQ0uyVsOYYDVJXRhovvuUvBEwJSuBVKpbYeZjCpQrWH", Redacted("openai_key")},
      {"key=sk-proj-hueUa1GnoBcMqHaWB8m25yX9H3bJP-Nih7TO7DKDQBgjrdBG1ywc7zGVmbELfGmFL2JO done",
       "key=" + Redacted("openai_key") + " done"},
  });
  ExpectUnchanged({
      "pip install scikit-learn sk-learn",
      "task-0123456789abcdefghijklmn",     // not at a word start
      "sk-0123456789abcdefghi",            // 19 after the prefix
      "mask-rcnn_R_50_FPN_3x_0123456789",  // not at a word start
  });
}

TEST(RedactorRulesTest, SlackGoogleStripe) {
  ExpectRedactions({
      {"xoxb-834346941534-3950754303408-jqFcf9tXprF5AyRaiC92All9", Redacted("slack_token")},
      {"SLACK=xoxp-926458894847-025572654632-5660899682646-114467833b3f847dbfbf0a22b3930edb;",
       "SLACK=" + Redacted("slack_token") + ";"},
      {"?key=AIzaku_NlE9FXDc-yreIogLe3pOsxVZSo0jR2z3&alt=json",
       "?key=" + Redacted("google_api_key") + "&alt=json"},
      {"stripe sk_live_RK5PcXxFSs25g3jFm25ECrug rk_live_cYq8YYUt3pnMWdKNHpZhfuNI",
       "stripe " + Redacted("stripe_key") + " " + Redacted("stripe_key")},
      {"sk_test_4eC39HqLyjWDarjtT1zdp7dc", Redacted("stripe_key")},
  });
  ExpectUnchanged({
      "xoxz-834346941534-3950754303408", "xoxb-12345",
      "AIzaku_NlE9FXDc-yreIogLe3pOsxVZSo0jR2z",  // 34 after the prefix
      "sk_live_short",
      "pk_live_RK5PcXxFSs25g3jFm25ECrug",  // publishable keys are public
  });
}

TEST(RedactorRulesTest, UrlCredentialsKeepUserAndHost) {
  ExpectRedactions({
      {"postgres://mlflow:S3cr3tPassw0rd2026@db.internal:5432/mlflow",
       "postgres://mlflow:" + Redacted("url_credentials") + "@db.internal:5432/mlflow"},
      {"pip index https://alice:p4ssW0rd@pypi.internal/simple",
       "pip index https://alice:" + Redacted("url_credentials") + "@pypi.internal/simple"},
      {"redis://:kiuf6srtBk5JLCKkfDXe@10.0.3.9:6379/0",
       "redis://:" + Redacted("url_credentials") + "@10.0.3.9:6379/0"},
      // An '@' inside the password: the last '@' before the path ends it.
      {"HTTPS://bob:p@ss:w0rd@host.example/x",
       "HTTPS://bob:" + Redacted("url_credentials") + "@host.example/x"},
      // Percent-encoded inside another URL.
      {"/login?next=https%3A%2F%2Fbob%3AXISADWcGNkO7rsVT7zvw%40gpu-node-07%3A8888%2Flab",
       "/login?next=https%3A%2F%2Fbob%3A" + Redacted("url_credentials") +
           "%40gpu-node-07%3A8888%2Flab"},
  });
  ExpectUnchanged({
      "http://10.0.3.17:8080/metrics",
      "ssh://git@github.com:22/alice/llama-sft.git",
      "git@github.com:alice/llama-sft.git",
      "https://host.example/path?email=alice@example.com",
      "http://[::1]:8888/lab",
      "mailto:alice@example.com",
  });
}

TEST(RedactorRulesTest, JupyterToken) {
  const std::string t = "0c722e11346231bf8da596117f292521cac6c9930279e94b";
  ExpectRedactions({
      {"http://gpu-node-07:8888/lab?token=" + t,
       "http://gpu-node-07:8888/lab?token=" + Redacted("jupyter_token")},
      {"http://127.0.0.1:8888/tree?path=runs&token=" + t + "&kernel=python3",
       "http://127.0.0.1:8888/tree?path=runs&token=" + Redacted("jupyter_token") +
           "&kernel=python3"},
      {"/lab?TOKEN=" + t + "#notebook", "/lab?TOKEN=" + Redacted("jupyter_token") + "#notebook"},
      // Percent-encoded in another URL: %3F ? %3D = %26 &.
      {"/hub/login?next=%2Flab%3Ftoken%3D" + t + "%26x%3D1 302",
       "/hub/login?next=%2Flab%3Ftoken%3D" + Redacted("jupyter_token") + "%26x%3D1 302"},
      {"%26token%3D" + t, "%26token%3D" + Redacted("jupyter_token")},
      // The token itself percent-encoded.
      {"?token=ab%2Fcd%3D%3Def01234567", "?token=" + Redacted("jupyter_token")},
  });
  ExpectUnchanged({
      "http://gpu-node-07:8888/lab",
      "/api?tokens=512&max_token=5&token_type=bearer",
      "/lab?token=",
      "GET /tree?path=runs%2Fllama7b 200",
  });
}

TEST(RedactorRulesTest, AuthorizationHeaderKeepsTheScheme) {
  ExpectRedactions({
      {"Authorization: Bearer iYONymwpea8HIbvp-Xp_Z2Z4RTggVK3tK",
       "Authorization: Bearer " + Redacted("authorization_header")},
      {"authorization: basic YWxpY2U6bGR5V29XNlU5QXI5Vkg=",
       "authorization: basic " + Redacted("authorization_header")},
      {"Authorization: ApiKey dcf9314f36c34cb8d68272726b12d922 (from env)",
       "Authorization: ApiKey " + Redacted("authorization_header") + " (from env)"},
      {"authorization=dcf9314f36c34cb8d68272726b12d922",
       "authorization=" + Redacted("authorization_header")},
      {R"(headers={"Authorization": "Token e42b6c2cf1ec189a6a82f3dad01d194e", "Accept": "*/*"})",
       R"(headers={"Authorization": "Token )" + Redacted("authorization_header") +
           R"(", "Accept": "*/*"})"},
      {"{'Authorization': 'Basic UWw1eURPZ3YxWVJiNkoy'}",
       "{'Authorization': 'Basic " + Redacted("authorization_header") + "'}"},
      {"Proxy-Authorization: Basic Ql5yDOgv1YRb6J2IxrS5hmEZ",
       "Proxy-Authorization: Basic " + Redacted("authorization_header")},
  });
  ExpectUnchanged({
      "Authorization failed for user alice",
      "authorization_code flow enabled",
      "see the Authorization header docs",
  });
}

TEST(RedactorRulesTest, ApiKeyHeader) {
  ExpectRedactions({
      {"X-Api-Key: 6f3391fa920a5db4a426a881d782969d", "X-Api-Key: " + Redacted("api_key_header")},
      {"curl -H 'x-auth-token: 56514fe253520d3ee19bca4f699582c7' https://api.internal/v1",
       "curl -H 'x-auth-token: " + Redacted("api_key_header") + "' https://api.internal/v1"},
      {R"({"X-Wandb-Key": "1bacb0cd1ddab5e3dd716687440cb663", "User-Agent": "wandb"})",
       R"({"X-Wandb-Key": ")" + Redacted("api_key_header") + R"(", "User-Agent": "wandb"})"},
      {"X-Goog-Api-Key: 3c77275bbddb7b2bf4638556;x-trace: 1",
       "X-Goog-Api-Key: " + Redacted("api_key_header") + ";x-trace: 1"},
  });
  ExpectUnchanged({
      "x-request-id: 5f1c2d3e-4b5a-6978-8796-a5b4c3d2e1f0",
      "X-Key-Id: 7c9e6679",
      "x-tokens: 512",
      "max-tokens: 512",
  });
}

TEST(RedactorRulesTest, BearerToken) {
  ExpectRedactions({
      {"retrying with Bearer QPoLYTR30hnKpIvCfppH.iklMTonIHJVCqS2S793l after 401",
       "retrying with Bearer " + Redacted("bearer_token") + " after 401"},
      {"bearer 88LGsrgFG+fn2HysFhCkSj9g==", "bearer " + Redacted("bearer_token")},
  });
  ExpectUnchanged({
      "token_type: bearer",
      "Bearer short",
      "bearer token expired, refreshing",
  });
}

TEST(RedactorRulesTest, SecretAssignments) {
  const std::string s = Redacted("secret_assignment");
  ExpectRedactions({
      {"export WANDB_API_KEY=756c4cf32cc5ea563072475f5793309f433d4f23",
       "export WANDB_API_KEY=" + s},
      {"AWS_SECRET_ACCESS_KEY=qiJ5PqKfUg7z1xtn1DjaiZ9sHB7QziKzxgErUFUc aws s3 sync",
       "AWS_SECRET_ACCESS_KEY=" + s + " aws s3 sync"},
      {"HF_TOKEN=not-an-hf-format-token-8EObTt4y", "HF_TOKEN=" + s},
      {R"({"db_password": "QKE9PDXl*PO#j*Wk"})", R"({"db_password": ")" + s + R"("})"},
      {R"({"db_password":"QKE9PDXl*PO#j*Wk","user":"alice"})",
       R"({"db_password":")" + s + R"(","user":"alice"})"},
      {"password: BO7wEW8BmIaXqphP7ZLW", "password: " + s},
      {"    token: b975644c90a95c79001b15d5df0c9de19b93f7d8490cabec", "    token: " + s},
      {"Namespace(lr=0.001, api_key='eKrrmZqGrSC8NJDWBegb', seed=42)",
       "Namespace(lr=0.001, api_key='" + s + "', seed=42)"},
      {"oauth client_secret=lXFqdhvhw9HednsTNqOZ client_id=trainer",
       "oauth client_secret=" + s + " client_id=trainer"},
      {"clientSecret = \"bGHW3gUwuOnpuYN1Hruz\";", "clientSecret = \"" + s + "\";"},
      {"DB_PWD=RbVqFDVOkcgSf6tBeyN9 ./migrate.sh", "DB_PWD=" + s + " ./migrate.sh"},
      {"ldap passwd=FWdceuiYqHazaKa3wGbH", "ldap passwd=" + s},
      {"MINIO_ACCESS_KEY=SbV5KCSZRibY57nmaMwf", "MINIO_ACCESS_KEY=" + s},
      {"private_key: \"aaBPU3tYlvQEAA9f1pMU\"", "private_key: \"" + s + "\""},
      {"comet apikey: 800RKU0gau3Af1Afo73a", "comet apikey: " + s},
      {"gcloud credential=NRGeRHB49oNefjh5ctZ6", "gcloud credential=" + s},
      {"--hf-token=qpzrFw4jvyrh2R9GGE1H --push", "--hf-token=" + s + " --push"},
      {"passphrase='correct horse battery staple'", "passphrase='" + s + "'"},
  });
  ExpectUnchanged({
      "max_tokens=2048",
      "num_tokens: 512",
      "pad_token_id=0",
      "eos_token: </s>",
      "tokenizer=bert-base-uncased",
      "export PWD=/home/alice",
      "OLDPWD=/home/alice",
      "password_file=/etc/mlflow/db_password.txt",
      "token_type=bearer",
      "api_key_id: 7c9e6679",
      "password=",
      "the password is stored in the keyring",
  });
}

TEST(RedactorRulesTest, UrlEncodedForms) {
  const std::string s = Redacted("secret_assignment");
  ExpectRedactions({
      {"body=user%3Dalice%26password%3DVNhwi1IswvCcUzola21D",
       "body=user%3Dalice%26password%3D" + s},
      {"GET /run?user=alice&password=p%40ss%21iEBP5lIcxC4jHiHx 200",
       "GET /run?user=alice&password=" + s + " 200"},
      {"GET /run?api_key=kERj8Kyn8dJch5yhNUN4&page=2", "GET /run?api_key=" + s + "&page=2"},
      {"q=api_key%3DkERj8Kyn8dJch5yhNUN4%26page%3D2", "q=api_key%3D" + s + "%26page%3D2"},
  });
}

// ---------------------------------------------------------------------------
// Position, punctuation, repetition, size.

TEST(RedactorTest, SecretsAtTheStartAndEnd) {
  const std::string hf = "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  const std::string h = Redacted("huggingface_token");
  ExpectRedactions({
      {hf, h},
      {hf + " at start", h + " at start"},
      {"at end " + hf, "at end " + h},
      {"password=BO7wEW8BmIaXqphP7ZLW", "password=" + Redacted("secret_assignment")},
      {"?token=abcdef0123456789", "?token=" + Redacted("jupyter_token")},
      {"AKIAIDVWTFKTANGPVYQE\n", Redacted("aws_access_key_id") + "\n"},
      {"\nAKIAIDVWTFKTANGPVYQE", "\n" + Redacted("aws_access_key_id")},
  });
}

TEST(RedactorTest, SecretsNextToPunctuationAndQuotes) {
  const std::string ghp = "ghp_B4r6bSr0pFBOPCWBRDFOxEzf5FJtRBZRAJyu";
  const std::string g = Redacted("github_token");
  const std::string s = Redacted("secret_assignment");
  ExpectRedactions({
      {"\"" + ghp + "\"", "\"" + g + "\""},
      {"'" + ghp + "'", "'" + g + "'"},
      {"(" + ghp + ")", "(" + g + ")"},
      {ghp + "," + ghp + ";", g + "," + g + ";"},
      {"<" + ghp + ">", "<" + g + ">"},
      {"[" + ghp + "]", "[" + g + "]"},
      {"`" + ghp + "`.", "`" + g + "`."},
      {"(password=BO7wEW8BmIaXqphP7ZLW)", "(password=" + s + ")"},
      {"password=BO7wEW8BmIaXqphP7ZLW, user=alice", "password=" + s + ", user=alice"},
      {"password=BO7wEW8BmIaXqphP7ZLW; user=alice", "password=" + s + "; user=alice"},
      {"<password=BO7wEW8BmIaXqphP7ZLW>", "<password=" + s + ">"},
      {"\"password=BO7wEW8BmIaXqphP7ZLW\"", "\"password=" + s + "\""},
      {"'password: BO7wEW8BmIaXqphP7ZLW'", "'password: " + s + "'"},
      // A specific format inside an assignment keeps its precise name, and
      // the punctuation after it stays.
      {"(GITHUB_TOKEN=" + ghp + ")", "(GITHUB_TOKEN=" + g + ")"},
      {"GITHUB_TOKEN=" + ghp + ",", "GITHUB_TOKEN=" + g + ","},
      {"id_token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IifQ.bXlfc2ln; Path=/",
       "id_token=" + Redacted("jwt") + "; Path=/"},
      {"(http://h:8888/lab?token=abcdef0123456789)",
       "(http://h:8888/lab?token=" + Redacted("jupyter_token") + ")"},
      {"see http://h:8888/lab?token=abcdef0123456789, then",
       "see http://h:8888/lab?token=" + Redacted("jupyter_token") + ", then"},
  });
}

TEST(RedactorTest, SeparatedAssignmentsAfterANonSecretName) {
  // The value of a name that is not secret must not hide the next
  // assignment.
  const std::string s = Redacted("secret_assignment");
  ExpectRedactions({
      {"max_tokens=2048,api_key=kERj8Kyn8dJch5yhNUN4", "max_tokens=2048,api_key=" + s},
      {"num_tokens:512;password:BO7wEW8BmIaXqphP7ZLW", "num_tokens:512;password:" + s},
      {"tokenizer=gpt2 token=abcdef0123456789", "tokenizer=gpt2 token=" + s},
  });
}

TEST(RedactorTest, RepeatedInOneLine) {
  const std::string hf = "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  std::string in;
  std::string want;
  for (int i = 0; i < 5; ++i) {
    in += "hf=" + hf + " pw=password=BO7wEW8BmIaXqphP7ZLW url=?token=abcdef0123456789 | ";
    want += "hf=" + Redacted("huggingface_token") +
            " pw=password=" + Redacted("secret_assignment") +
            " url=?token=" + Redacted("jupyter_token") + " | ";
  }
  RedactionHits hits;
  EXPECT_EQ(Redact(in, Default(), &hits), want);
  EXPECT_EQ(HitNames(hits),
            (std::vector<std::string>{"huggingface_token", "jupyter_token", "secret_assignment"}));
  // The same secret back to back.
  const std::string akia = "AKIAIDVWTFKTANGPVYQE";
  EXPECT_EQ(Redact(akia + " " + akia + " " + akia), Redacted("aws_access_key_id") + " " +
                                                        Redacted("aws_access_key_id") + " " +
                                                        Redacted("aws_access_key_id"));
}

TEST(RedactorTest, OneMebibyteLines) {
  constexpr std::size_t kMiB = 1 << 20;
  // Ordinary text: hex, words, numbers, punctuation; no secret.
  std::string filler;
  filler.reserve(kMiB + 128);
  for (int i = 0; filler.size() < kMiB; ++i) {
    filler += "step " + std::to_string(i) + " loss=0.4312 tokens/s=152334 sha 9fceb02d0ae598e9 ";
  }
  filler.resize(kMiB);
  ExpectUnchanged({filler});

  const std::string hf = "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  const std::string akia = "AKIAIDVWTFKTANGPVYQE";
  const std::string pw = " password=BO7wEW8BmIaXqphP7ZLW ";
  const std::size_t mid = filler.size() / 2;
  // Cut the filler at spaces so the planted secrets stay words of their own.
  const std::size_t cut = filler.rfind(' ', mid);
  const std::string in = hf + " " + filler.substr(0, cut) + pw + filler.substr(cut) + " " + akia;
  const std::string want = Redacted("huggingface_token") + " " + filler.substr(0, cut) +
                           " password=" + Redacted("secret_assignment") + " " + filler.substr(cut) +
                           " " + Redacted("aws_access_key_id");
  RedactionHits hits;
  const std::string out = Redact(in, Default(), &hits);
  EXPECT_EQ(out.size(), want.size());
  EXPECT_TRUE(out == want) << "1 MiB line redacted differently";
  EXPECT_EQ(HitNames(hits), (std::vector<std::string>{"aws_access_key_id", "huggingface_token",
                                                      "secret_assignment"}));
}

TEST(RedactorTest, OneMebibyteOfBinaryLikeText) {
  // Bytes of every value, so RE2's DFA sees many states; a secret at the
  // end must still be found.
  std::string in;
  std::uint32_t x = 12345;
  while (in.size() < (1 << 20)) {
    x = x * 1103515245 + 12345;
    in.push_back(static_cast<char>(x >> 24));
  }
  in += " AKIAIDVWTFKTANGPVYQE";
  const std::string out = Redact(in);
  EXPECT_EQ(out.find("AKIAIDVWTFKTANGPVYQE"), std::string::npos);
  EXPECT_NE(out.find(Redacted("aws_access_key_id")), std::string::npos);
}

TEST(RedactorTest, MaskTextIsNeverMaskedAgain) {
  ExpectUnchanged({Redacted("secret_assignment"), "password=" + Redacted("secret_assignment"),
                   "?token=" + Redacted("jupyter_token"),
                   "Authorization: Bearer " + Redacted("jwt"),
                   "postgres://u:" + Redacted("url_credentials") + "@h/db",
                   "\"api_key\": \"" + Redacted("huggingface_token") + "\""});
}

// ---------------------------------------------------------------------------
// The corpus: ordinary lines pass byte for byte; planted secrets are masked.

TEST(RedactorCorpusTest, OrdinaryTrainingLogsPassUnchanged) {
  const auto lines = dashcam::testing::OrdinaryLogLines();
  EXPECT_GE(lines.size(), 60u);
  ExpectUnchanged(lines);
  // All of them in one multi-line text too.
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  ExpectUnchanged({all});
}

// A planted text as redaction must leave it: the secret replaced by its
// mask; for a private key, the whole block from BEGIN to END (or to the end
// of a block cut short).
std::string MaskedText(const PlantedSecret& p) {
  std::string out = p.text;
  std::size_t begin = out.find(p.secret);
  std::size_t end = begin + p.secret.size();
  if (p.rule == "private_key") {
    begin = out.find("-----BEGIN");
    end = out.find("-----END", begin);
    end = end == std::string::npos ? out.size() : out.find("-----", end + 8) + 5;
  }
  return out.replace(begin, end - begin, Redacted(p.rule));
}

TEST(RedactorCorpusTest, PlantedSecretsAreMaskedWithTheirRuleName) {
  const auto planted = dashcam::testing::PlantedSecrets();
  std::vector<std::string> rules_seen;
  std::vector<std::string> secrets_seen;
  for (const PlantedSecret& p : planted) {
    SCOPED_TRACE(p.text);
    ASSERT_GE(p.secret.size(), 12u);
    ASSERT_NE(p.text.find(p.secret), std::string::npos);
    EXPECT_EQ(std::count(secrets_seen.begin(), secrets_seen.end(), p.secret), 0) << "duplicate";
    secrets_seen.push_back(p.secret);
    RedactionHits hits;
    const std::string out = Redact(p.text, Default(), &hits);
    EXPECT_EQ(out.find(p.secret), std::string::npos) << out;
    EXPECT_EQ(out, MaskedText(p));
    EXPECT_EQ(HitNames(hits), std::vector<std::string>{p.rule}) << out;
    rules_seen.push_back(p.rule);
  }
  // Every default rule has at least one planted case.
  for (const auto& rule : DefaultRedactionRules()) {
    EXPECT_NE(std::find(rules_seen.begin(), rules_seen.end(), rule.name), rules_seen.end())
        << rule.name;
  }
}

// ---------------------------------------------------------------------------
// RedactionHits, Describe, configuration.

TEST(RedactorTest, HitsNameEachRuleOnceInFirstHitOrder) {
  RedactionHits hits;
  const std::string out =
      Redact("a password=BO7wEW8BmIaXqphP7ZLW b AKIAIDVWTFKTANGPVYQE c password=RbVqFDVOkcgSf6tB",
             Default(), &hits);
  EXPECT_EQ(out, "a password=" + Redacted("secret_assignment") + " b " +
                     Redacted("aws_access_key_id") +
                     " c password=" + Redacted("secret_assignment"));
  // Rules run in their order (specific formats first), so aws comes first.
  EXPECT_EQ(HitNames(hits), (std::vector<std::string>{"aws_access_key_id", "secret_assignment"}));

  RedactionHits h;
  h.Add(3);
  h.Add(1);
  h.Add(3);
  EXPECT_EQ(h.ids(), (std::vector<std::uint16_t>{3, 1}));
  h.Clear();
  EXPECT_TRUE(h.empty());
}

TEST(RedactorTest, HitsAccumulateAcrossCalls) {
  RedactionHits hits;
  std::string out;
  ASSERT_TRUE(Default().RedactText("AKIAIDVWTFKTANGPVYQE", out, hits));
  ASSERT_TRUE(Default().RedactText("password=BO7wEW8BmIaXqphP7ZLW", out, hits));
  EXPECT_FALSE(Default().RedactText("nothing here", out, hits));
  EXPECT_EQ(HitNames(hits), (std::vector<std::string>{"aws_access_key_id", "secret_assignment"}));
}

TEST(RedactorTest, DescribeListsDefaultsThenTheSecretFieldRule) {
  const auto rules = Default().Describe();
  const auto defaults = DefaultRedactionRules();
  ASSERT_EQ(rules.size(), defaults.size() + 1);
  for (std::size_t i = 0; i < defaults.size(); ++i) {
    EXPECT_EQ(rules[i].name, defaults[i].name);
    EXPECT_EQ(rules[i].pattern, defaults[i].pattern);
    EXPECT_TRUE(rules[i].builtin);
  }
  EXPECT_EQ(rules.back().name, kSecretFieldRule);
  EXPECT_EQ(Default().rule_name(Default().secret_field_rule()), kSecretFieldRule);
  // Default rule names are valid mask names.
  for (const auto& r : defaults) {
    EXPECT_TRUE(std::all_of(r.name.begin(), r.name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || c == '_';
    })) << r.name;
  }
}

TEST(RedactorConfigTest, DisablingADefaultRule) {
  RedactionConfig config;
  config.disabled = {"jupyter_token"};
  auto r = MustCreate(config);
  ASSERT_TRUE(r);
  const std::string url = "http://h:8888/lab?token=0c722e11346231bf8da596117f292521";
  // `token=` is still an assignment of a secret name: the generic rule
  // masks it, under its own name.
  RedactionHits hits;
  EXPECT_EQ(Redact(url, *r, &hits), "http://h:8888/lab?token=" + Redacted("secret_assignment"));
  EXPECT_EQ(HitNames(hits, *r), std::vector<std::string>{"secret_assignment"});
  EXPECT_EQ(Redact("AKIAIDVWTFKTANGPVYQE", *r), Redacted("aws_access_key_id"));
  for (const auto& info : r->Describe()) EXPECT_NE(info.name, "jupyter_token");

  config.disabled.push_back("secret_assignment");
  r = MustCreate(config);
  ASSERT_TRUE(r);
  EXPECT_EQ(Redact(url, *r), url);
  EXPECT_EQ(Redact("password=BO7wEW8BmIaXqphP7ZLW", *r), "password=BO7wEW8BmIaXqphP7ZLW");
  EXPECT_EQ(Redact("X-Api-Key: 6f3391fa920a5db4a426a881d782969d", *r),
            "X-Api-Key: " + Redacted("api_key_header"));
}

TEST(RedactorConfigTest, DisablingEveryDefaultRuleLeavesTextAlone) {
  RedactionConfig config;
  for (const auto& d : DefaultRedactionRules()) config.disabled.push_back(d.name);
  auto r = MustCreate(config);
  ASSERT_TRUE(r);
  const std::string hf = "HF_TOKEN=hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  EXPECT_EQ(Redact(hf, *r), hf);
  EXPECT_TRUE(r->IsSecretField("password"));
}

TEST(RedactorConfigTest, UnknownDisabledNameIsAnError) {
  RedactionConfig config;
  config.disabled = {"jupyter_tokens"};
  auto r = Redactor::Create(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("jupyter_tokens"), std::string::npos) << r.status().message();
}

TEST(RedactorConfigTest, UserRuleWithNamedGroup) {
  RedactionConfig config;
  config.rules.push_back(RedactionRule{
      "lab_vault_token", R"(vault token (?P<secret>hvs\.[A-Za-z0-9]{24,}))", "secret"});
  config.rules.push_back(RedactionRule{"employee_id", R"(\bEMP-[0-9]{6}\b)", ""});
  auto r = MustCreate(config);
  ASSERT_TRUE(r);
  RedactionHits hits;
  EXPECT_EQ(Redact("vault token hvs.CAESIJ3kx9z2abHFMhYDXkqVTxWFGg ok", *r, &hits),
            "vault token " + Redacted("lab_vault_token") + " ok");
  EXPECT_EQ(HitNames(hits, *r), std::vector<std::string>{"lab_vault_token"});
  // Outside its context the group is not masked.
  EXPECT_EQ(Redact("hvs.CAESIJ3kx9z2abHFMhYDXkqVTxWFGg", *r), "hvs.CAESIJ3kx9z2abHFMhYDXkqVTxWFGg");
  EXPECT_EQ(Redact("by EMP-004217.", *r), "by " + Redacted("employee_id") + ".");
  const auto rules = r->Describe();
  ASSERT_GE(rules.size(), 3u);
  EXPECT_EQ(rules[rules.size() - 3].name, "lab_vault_token");
  EXPECT_EQ(rules[rules.size() - 3].group, "secret");
  EXPECT_FALSE(rules[rules.size() - 3].builtin);
  EXPECT_EQ(rules[rules.size() - 2].name, "employee_id");
}

TEST(RedactorConfigTest, InvalidPatternNamesTheRuleAndRe2sError) {
  RedactionConfig config;
  config.rules.push_back(RedactionRule{"broken_rule", "abc(def", ""});
  auto r = Redactor::Create(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string want_error = RE2("abc(def", RE2::Quiet).error();
  ASSERT_FALSE(want_error.empty());
  EXPECT_NE(r.status().message().find("broken_rule"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(want_error), std::string::npos) << r.status().message();
}

TEST(RedactorConfigTest, OtherRuleErrors) {
  const std::vector<RedactionRule> bad = {
      {"no_group", "abc(?P<x>def)", "secret"},  // no group named `secret`
      {"jwt", "abc", ""},                       // a default rule's name
      {kSecretFieldRule, "abc", ""},            // the field rule's name
  };
  for (const auto& rule : bad) {
    RedactionConfig config;
    config.rules.push_back(rule);
    auto r = Redactor::Create(config);
    ASSERT_FALSE(r.ok()) << rule.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(rule.name), std::string::npos) << r.status().message();
  }
  // Once disabled, a default rule's name may be reused.
  RedactionConfig config;
  config.disabled = {"jwt"};
  config.rules.push_back({"jwt", R"(\bJWT-[0-9]{8}\b)", ""});
  auto r = MustCreate(config);
  ASSERT_TRUE(r);
  EXPECT_EQ(Redact("JWT-12345678", *r), Redacted("jwt"));
}

TEST(RedactorConfigTest, ExtraFieldNames) {
  RedactionConfig config;
  config.field_names = {"session_cookie", "X-Internal-Sig"};
  auto r = MustCreate(config);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->IsSecretField("session_cookie"));
  EXPECT_TRUE(r->IsSecretField("SESSION_COOKIE"));
  EXPECT_TRUE(r->IsSecretField("x-internal-sig"));
  EXPECT_TRUE(r->IsSecretField("api_key"));  // the built-in names still count
  EXPECT_FALSE(r->IsSecretField("session"));
  EXPECT_FALSE(r->IsSecretField("max_tokens"));
  EXPECT_FALSE(Default().IsSecretField("session_cookie"));
  EXPECT_EQ(r->field_names(), (std::vector<std::string>{"session_cookie", "x-internal-sig"}));
}

// ---------------------------------------------------------------------------
// LoadRedactionConfig

class LoadRedactionConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.path() + "/rules.yaml";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  void ExpectError(const std::string& text, const std::string& mentions) {
    const auto path = Write(text);
    auto c = LoadRedactionConfig(path);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(path), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find(mentions), std::string::npos) << c.status().message();
  }

  dashcam::testing::TempDir dir_;
};

// The sample shipped in deploy/ loads, compiles and does what it says.
TEST(DeployedRedactionRulesTest, SampleFileWorks) {
  auto config = LoadRedactionConfig(DASHCAM_SOURCE_DIR "/deploy/redaction-rules.yml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto redactor = Redactor::Create(*config);
  ASSERT_TRUE(redactor.ok()) << redactor.status().ToString();
  std::string out;
  RedactionHits hits;
  ASSERT_TRUE((*redactor)->RedactText("vault login hvs.CAESIJ0k9zXq7WmR2bT4vN8pL1sQ", out, hits));
  EXPECT_EQ(out, "vault login [REDACTED:vault_token]");
  ASSERT_TRUE((*redactor)->RedactText("ldap_bind cn=admin Sup3rS3cret!", out, hits));
  EXPECT_EQ(out, "ldap_bind cn=admin [REDACTED:lab_ldap_password]");
  EXPECT_TRUE((*redactor)->IsSecretField("Session_Cookie"));
}

TEST_F(LoadRedactionConfigTest, GoodFile) {
  auto c = LoadRedactionConfig(Write(R"(# lab rules
rules:
  - name: lab_vault_token
    pattern: 'hvs\.[A-Za-z0-9]{24,}'
  - name: ticket_secret
    pattern: 'ticket (?P<secret>[0-9a-f]{16})'
    group: secret
disable: [bearer_token, jwt]
fields:
  - session_cookie
)"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->rules.size(), 2u);
  EXPECT_EQ(c->rules[0].name, "lab_vault_token");
  EXPECT_EQ(c->rules[0].pattern, R"(hvs\.[A-Za-z0-9]{24,})");
  EXPECT_EQ(c->rules[0].group, "");
  EXPECT_FALSE(c->rules[0].builtin);
  EXPECT_EQ(c->rules[1].group, "secret");
  EXPECT_EQ(c->disabled, (std::vector<std::string>{"bearer_token", "jwt"}));
  EXPECT_EQ(c->field_names, std::vector<std::string>{"session_cookie"});

  auto r = MustCreate(*c);
  ASSERT_TRUE(r);
  EXPECT_EQ(Redact("vault hvs.CAESIJ3kx9z2abHFMhYDXkqVTxWFGg, ticket 0123456789abcdef", *r),
            "vault " + Redacted("lab_vault_token") + ", ticket " + Redacted("ticket_secret"));
  EXPECT_EQ(Redact("Bearer QPoLYTR30hnKpIvCfppH.iklMTonIHJVCqS2S793l", *r),
            "Bearer QPoLYTR30hnKpIvCfppH.iklMTonIHJVCqS2S793l");
  EXPECT_TRUE(r->IsSecretField("session_cookie"));
}

TEST_F(LoadRedactionConfigTest, EmptyFileMeansDefaults) {
  auto c = LoadRedactionConfig(Write("# nothing\n"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->enabled);
  EXPECT_TRUE(c->rules.empty());
  EXPECT_TRUE(c->disabled.empty());
  EXPECT_TRUE(c->field_names.empty());
}

TEST_F(LoadRedactionConfigTest, Errors) {
  ExpectError("rules: []\nmask: all\n", "unknown key 'mask'");
  ExpectError("rules:\n  - name: x\n    pattern: a\n    flags: i\n", "unknown key 'flags'");
  ExpectError("rules:\n  - name: Bad-Name\n    pattern: a\n", "Bad-Name");
  ExpectError("rules:\n  - name: ''\n    pattern: a\n", "name");
  ExpectError("rules:\n  - name: no_pattern\n", "no_pattern");
  ExpectError("rules: {name: x}\n", "'rules' must be a list");
  ExpectError("disable: jwt\n", "disable");
  ExpectError("fields: [[a]]\n", "fields");
  ExpectError("- just\n- a list\n", "mapping");
  ExpectError("rules: [\n  {name: x, pattern: 'a'\n", "");  // not YAML
  ExpectError("\tkey: \"unterminated\n", "");               // not YAML either
}

TEST_F(LoadRedactionConfigTest, MissingFile) {
  auto c = LoadRedactionConfig(dir_.path() + "/absent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("absent.yaml"), std::string::npos);
}

// ---------------------------------------------------------------------------
// DocumentRedactor

class DocumentRedactorTest : public ::testing::Test {
 protected:
  // The redacted document, or the input when it was left as it is; checks
  // that a rewritten document is valid JSON and stable under a second pass
  // (apart from the "redacted" array, which a second pass drops and
  // rebuilds from its own hits).
  std::string Redact(std::string_view json, std::vector<std::string>* hit_names = nullptr) {
    const std::string padded = PadForParsing(json);
    std::string out = "untouched";
    RedactionHits hits;
    auto changed =
        doc_.Redact(std::string_view(padded.data(), json.size()), padded.size(), out, hits);
    EXPECT_TRUE(changed.ok()) << json << ": " << changed.status().ToString();
    if (hit_names) *hit_names = HitNames(hits);
    if (!changed.ok() || !*changed) return std::string(json);
    EXPECT_TRUE(IsValidJson(out)) << out;
    EXPECT_LE(out.size(), json.size() * Redactor::kMaxGrowth + 64);
    // Nothing of the first pass is masked again.
    const std::string padded_out = PadForParsing(out);
    std::string again;
    RedactionHits again_hits;
    auto twice = doc_.Redact(std::string_view(padded_out.data(), out.size()), padded_out.size(),
                             again, again_hits);
    EXPECT_TRUE(twice.ok());
    for (auto id : again_hits.ids()) {
      EXPECT_EQ(Default().rule_name(id), kSecretFieldRule) << "masked twice: " << out;
    }
    return out;
  }

  static bool IsValidJson(const std::string& json) {
    simdjson::dom::parser p;
    simdjson::dom::element e;
    return !p.parse(json).get(e);
  }

  DocumentRedactor doc_{Default()};
};

TEST_F(DocumentRedactorTest, UnchangedDocumentsStayByteForByte) {
  for (const auto& json : dashcam::testing::OrdinaryJsonDocuments()) {
    const std::string padded = PadForParsing(json);
    std::string out = "untouched";
    RedactionHits hits;
    auto changed =
        doc_.Redact(std::string_view(padded.data(), json.size()), padded.size(), out, hits);
    ASSERT_TRUE(changed.ok()) << json;
    EXPECT_FALSE(*changed) << json << "\n -> " << out;
    EXPECT_TRUE(hits.empty());
  }
  // Whitespace and escapes in an untouched document are not normalized.
  const std::string spaced = "{ \"a\" : [ 1.50 , 1e3 ] ,\n \"b\" : \"x\\u0041\\n\" }";
  EXPECT_EQ(Redact(spaced), spaced);
}

TEST_F(DocumentRedactorTest, OrdinaryLinesAsMessagesPassUnchanged) {
  std::string json = R"({"lines":[)";
  bool first = true;
  for (const auto& line : dashcam::testing::OrdinaryLogLines()) {
    if (!first) json += ",";
    first = false;
    AppendJsonString(json, line);
  }
  json += "]}";
  std::vector<std::string> hits;
  EXPECT_EQ(Redact(json, &hits), json);
  EXPECT_TRUE(hits.empty());
}

TEST_F(DocumentRedactorTest, StringsAtAnyDepthAndInArrays) {
  std::vector<std::string> hits;
  EXPECT_EQ(
      Redact(
          R"({"message":"login hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g","n":1.50,"e":1e3,"a":{"b":{"c":["x","AKIAIDVWTFKTANGPVYQE",2,true,null]}},"ok":"plain"})",
          &hits),
      R"({"message":"login [REDACTED:huggingface_token]","n":1.50,"e":1e3,"a":{"b":{"c":["x","[REDACTED:aws_access_key_id]",2,true,null]}},"ok":"plain","redacted":["huggingface_token","aws_access_key_id"]})");
  EXPECT_EQ(hits, (std::vector<std::string>{"huggingface_token", "aws_access_key_id"}));
}

TEST_F(DocumentRedactorTest, SecretNamedFieldsAreMaskedWhateverTheirType) {
  std::vector<std::string> hits;
  EXPECT_EQ(
      Redact(
          R"({"api_key":"abc","password":12345,"credentials":{"user":"u","pw":"p"},"client_secret":["a","b"],"HF_TOKEN":true,"db_password":null,"nested":{"accessToken":"x"},"max_tokens":2048})",
          &hits),
      R"({"api_key":"[REDACTED:secret_field]","password":"[REDACTED:secret_field]","credentials":"[REDACTED:secret_field]","client_secret":"[REDACTED:secret_field]","HF_TOKEN":"[REDACTED:secret_field]","db_password":null,"nested":{"accessToken":"[REDACTED:secret_field]"},"max_tokens":2048,"redacted":["secret_field"]})");
  EXPECT_EQ(hits, std::vector<std::string>{"secret_field"});
  // Field names are never masked, even when they look like a secret.
  EXPECT_EQ(Redact(R"({"AKIAIDVWTFKTANGPVYQE":1})"), R"({"AKIAIDVWTFKTANGPVYQE":1})");
}

TEST_F(DocumentRedactorTest, ClientSentRedactedFieldIsDropped) {
  EXPECT_EQ(Redact(R"({"message":"hi","redacted":["jwt"]})"), R"({"message":"hi"})");
  EXPECT_EQ(Redact(R"({"redacted":true})"), R"({})");
  // With real hits, only dashcam's list remains.
  EXPECT_EQ(Redact(R"({"redacted":["none"],"msg":"AKIAIDVWTFKTANGPVYQE"})"),
            R"({"msg":"[REDACTED:aws_access_key_id]","redacted":["aws_access_key_id"]})");
  // Below the top level, "redacted" is an ordinary field.
  const std::string nested = R"({"a":{"redacted":["x"]}})";
  EXPECT_EQ(Redact(nested), nested);
}

TEST_F(DocumentRedactorTest, EscapedStrings) {
  // The secret is written with JSON escapes; it is found after unescaping
  // and the output re-escapes what it must.
  EXPECT_EQ(
      Redact(R"({"m":"tab\there \"quoted\" \u0041KIAIDVWTFKTANGPVYQE \u00e9\n","k\"ey":"v"})"),
      R"({"m":"tab\there \"quoted\" [REDACTED:aws_access_key_id] é\n","k\"ey":"v","redacted":["aws_access_key_id"]})");
  // An escaped secret field name is matched after unescaping.
  EXPECT_EQ(Redact(R"({"pass\u0077ord":"x"})"),
            R"({"password":"[REDACTED:secret_field]","redacted":["secret_field"]})");
  // An untouched escaped string keeps its escapes in a rewritten document.
  EXPECT_EQ(Redact(R"({"a":"\u0041\/b","p":"x","b":[1.50,-0.0,1E+3]})"),
            R"({"a":"\u0041\/b","p":"x","b":[1.50,-0.0,1E+3]})");
}

TEST_F(DocumentRedactorTest, RewrittenNumbersKeepTheirText) {
  EXPECT_EQ(
      Redact(R"({"password":"x","lr":1.50,"warmup":1e3,"big":12345678901234567890,"neg":-0.0})"),
      R"({"password":"[REDACTED:secret_field]","lr":1.50,"warmup":1e3,"big":12345678901234567890,"neg":-0.0,"redacted":["secret_field"]})");
}

// Regression (found by fuzz_redactor): a bad literal starting with 'n'
// (`nul`, `nupwdll`) in a document that needs rewriting made
// simdjson's is_null() result throw when read as a bool, terminating the
// server.
TEST_F(DocumentRedactorTest, BadNullLiteralIsInvalidNotACrash) {
  for (std::string_view json : {R"({"m":"AKIAIDVWTFKTANGPVYQE","a":nul})",
                                R"({"m":"AKIAIDVWTFKTANGPVYQE","a":[true,nupwdll,-0.0]})",
                                R"({"password":nul})", R"({"password":nullx,"b":1})"}) {
    const std::string padded = PadForParsing(json);
    std::string out;
    RedactionHits hits;
    auto r = doc_.Redact(std::string_view(padded.data(), json.size()), padded.size(), out, hits);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << json;
  }
}

TEST_F(DocumentRedactorTest, InvalidDocuments) {
  for (std::string_view json : {R"([1,2])", R"("s")", R"({"a":)", R"({"a":tru})", R"({"a":1.2.3})",
                                R"({"a":"x"} trailing)", ""}) {
    const std::string padded = PadForParsing(json);
    std::string out;
    RedactionHits hits;
    auto r = doc_.Redact(std::string_view(padded.data(), json.size()), padded.size(), out, hits);
    if (r.ok()) {
      // A parser may accept trailing bytes; it must not report a change.
      EXPECT_FALSE(*r) << json;
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << json;
    }
  }
}

// ---------------------------------------------------------------------------
// DocumentParser with a Redactor

class RedactingParserTest : public ::testing::Test {
 protected:
  Result<storage::Record> Parse(std::string_view json) {
    const std::string padded = PadForParsing(json);
    return parser_.Parse(std::string_view(padded.data(), json.size()), padded.size(),
                         1'700'000'000'000);
  }
  DocumentParser parser_{DocumentLimits{}, &Default()};
};

TEST_F(RedactingParserTest, MessageFieldsAndSourceAreMasked) {
  const std::string hf = "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  auto r = Parse(
      R"({"@timestamp":"2026-11-29T10:23:15.123Z","message":"login )" + hf +
      R"(","env":{"WANDB_API_KEY":"756c4cf32cc5ea563072475f5793309f433d4f23"},"url":"http://h:8888/?token=0c722e11346231bf8da5"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message, "login " + Redacted("huggingface_token"));
  EXPECT_EQ(r->source.find(hf), std::string::npos);
  EXPECT_EQ(r->source.find("756c4cf32cc5ea563072475f5793309f433d4f23"), std::string::npos);
  EXPECT_EQ(r->source.find("0c722e11346231bf8da5"), std::string::npos);
  std::vector<std::string> fields;
  for (const auto& f : r->fields) fields.push_back(f.name + "=" + f.text);
  EXPECT_EQ(fields,
            (std::vector<std::string>{"env.WANDB_API_KEY=" + Redacted("secret_field"),
                                      "url=http://h:8888/?token=" + Redacted("jupyter_token"),
                                      "redacted=huggingface_token", "redacted=secret_field",
                                      "redacted=jupyter_token"}));
}

TEST_F(RedactingParserTest, UnchangedDocumentKeepsItsSource) {
  const std::string json =
      R"({"message":"step 1200 tokens/s 152334", "max_tokens": 2048, "lr": 1.50})";
  auto r = Parse(json);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, json);
}

TEST_F(RedactingParserTest, ErrorMessagesDoNotQuoteSecrets) {
  const std::string token = "0c722e11346231bf8da596117f292521";
  // A valid document: the bad timestamp is redacted before it is read.
  auto r = Parse(R"({"@timestamp":"http://h/?token=)" + token + R"("})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("@timestamp"), std::string::npos);
  EXPECT_EQ(r.status().message().find(token), std::string::npos) << r.status().message();
  // An invalid document is read as sent; the error is redacted afterwards.
  r = Parse(R"({"@timestamp":"password=)" + token + R"(","a":})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find(token), std::string::npos) << r.status().message();
  r = Parse(R"({"@timestamp":"AKIAIDVWTFKTANGPVYQE","a":[})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("AKIAIDVWTFKTANGPVYQE"), std::string::npos)
      << r.status().message();
}

TEST_F(RedactingParserTest, BadLiteralInADocumentWithASecretIsAnError) {
  auto r = Parse(R"({"message":"AKIAIDVWTFKTANGPVYQE","a":[nupwdll]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().find("AKIAIDVWTFKTANGPVYQE"), std::string::npos)
      << r.status().message();
}

TEST_F(RedactingParserTest, PlantedSecretsNeverReachTheRecord) {
  for (const PlantedSecret& p : dashcam::testing::PlantedSecrets()) {
    std::string json = R"({"message":)";
    AppendJsonString(json, p.text);
    json += R"(,"detail":{"line":)";
    AppendJsonString(json, p.text);
    json += "}}";
    auto r = Parse(json);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->message.find(p.secret), std::string::npos) << r->message;
    EXPECT_EQ(r->source.find(p.secret), std::string::npos) << r->source;
    for (const auto& f : r->fields) EXPECT_EQ(f.text.find(p.secret), std::string::npos) << f.name;
  }
}

}  // namespace
}  // namespace dashcam::ingest
