// Integration tests of secret redaction (README "Redaction"): the real
// binary, a corpus with planted secrets (tests/common/redaction_corpus.h)
// sent over every ingest path, and checks that no secret survives anywhere
// the server writes: search answers, every file of the data directory (read
// as raw bytes, WAL included) and the server's own log. Ordinary training
// logs must come back byte for byte.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/source_codec.h"
#include "storage/sqlite_db.h"
#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/now.h"
#include "tests/common/redaction_corpus.h"
#include "tests/common/stored_events.h"
#include "tests/common/test_server.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::testing::redaction_test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// --- Text helpers --------------------------------------------------------------

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Mask(std::string_view rule) {
  return "[REDACTED:" + std::string(rule) + "]";
}

// The planted text as it must be stored: the secret replaced by its mask;
// for a private key, the whole block from BEGIN to END (or to the end of a
// block cut short).
std::string MaskedText(const PlantedSecret& p) {
  std::string out = p.text;
  std::size_t begin = out.find(p.secret);
  std::size_t end = begin + p.secret.size();
  if (p.rule == "private_key") {
    begin = out.find("-----BEGIN");
    end = out.find("-----END", begin);
    end = end == std::string::npos ? out.size() : out.find("-----", end + 8) + 5;
  }
  out.replace(begin, end - begin, Mask(p.rule));
  return out;
}

// The secret with the letters and digits that touch it in its text, so
// that a search for it is for whole tokens: `%3A<secret>%40` is one token
// `3a<secret>` (storage/text_tokenizer.h).
std::string SearchableSecret(const PlantedSecret& p) {
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::size_t begin = p.text.find(p.secret);
  std::size_t end = begin + p.secret.size();
  while (begin > 0 && alnum(p.text[begin - 1]) && alnum(p.text[begin])) --begin;
  while (end < p.text.size() && alnum(p.text[end]) && alnum(p.text[end - 1])) ++end;
  return p.text.substr(begin, end - begin);
}

// A query phrase matching `text` exactly (query_parser.h: backslash escapes).
std::string Phrase(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::size_t CountOf(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The end of the JSON object or array that starts at text[at]; npos if cut.
std::size_t SkipJsonValue(std::string_view text, std::size_t at) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The raw bytes of every hit's _source in a search answer, in order. A
// literal `"_source":` cannot occur inside a JSON string (its quotes would
// be escaped), so every occurrence is a key.
std::vector<std::string> RawSources(std::string_view body) {
  constexpr std::string_view kKey = "\"_source\":";
  std::vector<std::string> out;
  for (auto at = body.find(kKey); at != std::string_view::npos; at = body.find(kKey, at)) {
    at += kKey.size();
    const std::size_t end = SkipJsonValue(body, at);
    if (end == std::string_view::npos) break;
    out.emplace_back(body.substr(at, end - at));
    at = end;
  }
  return out;
}

// --- Sending ------------------------------------------------------------------

enum class Channel { kBulk, kBulkGzip, kNdjson, kBeats, kBeatsCompressed };
constexpr int kChannels = 5;

constexpr const char* kChannelNames[kChannels] = {"bulk", "bulk gzip", "ndjson", "beats",
                                                  "beats compressed"};

void SendBulk(HttpClient& client, const std::vector<std::string>& docs, bool gzip) {
  std::string body;
  for (const auto& d : docs)
    body += R"({"create":{"_index":"redaction-test"}})"
            "\n" +
            d + "\n";
  const auto res =
      gzip ? client.Post("/_bulk", Gzip(body),
                         {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}})
           : client.Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(res.status, 200) << res.body;
  const json::value v = json::parse(res.body);
  ASSERT_FALSE(v.at("errors").as_bool()) << res.body.substr(0, 2000);
  ASSERT_EQ(v.at("items").as_array().size(), docs.size());
}

void SendNdjson(HttpClient& client, const std::vector<std::string>& docs) {
  std::string body;
  for (const auto& d : docs) body += d + "\n";
  const auto res = client.Post("/api/v1/ingest", body);
  ASSERT_EQ(res.status, 200) << res.body;
  const json::value v = json::parse(res.body);
  ASSERT_EQ(v.at("accepted").as_int64(), static_cast<std::int64_t>(docs.size())) << res.body;
  ASSERT_EQ(v.at("rejected").as_int64(), 0) << res.body;
}

void SendBeats(std::uint16_t port, const std::vector<std::string>& docs, bool compressed) {
  std::string frames;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    frames += JsonFrame(static_cast<std::uint32_t>(i + 1), docs[i]);
  }
  BeatsClient beats(port);
  ASSERT_TRUE(beats.connected());
  ASSERT_TRUE(beats.Send(WindowFrame(static_cast<std::uint32_t>(docs.size())) +
                         (compressed ? CompressedFrame(frames) : frames)));
  const auto ack = beats.ReadFinalAck(seconds(30));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->seq, docs.size());
}

// Sends docs[i] over channel (i + offset) % kChannels, one batch per channel.
void SendOverEveryChannel(const TestServer& server, const std::vector<std::string>& docs,
                          int offset = 0) {
  std::vector<std::vector<std::string>> by_channel(kChannels);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    by_channel[(i + static_cast<std::size_t>(offset)) % kChannels].push_back(docs[i]);
  }
  HttpClient client("127.0.0.1", server.port());
  for (int c = 0; c < kChannels; ++c) {
    SCOPED_TRACE(kChannelNames[c]);
    const auto& batch = by_channel[static_cast<std::size_t>(c)];
    if (batch.empty()) continue;
    switch (static_cast<Channel>(c)) {
      case Channel::kBulk:
        SendBulk(client, batch, false);
        break;
      case Channel::kBulkGzip:
        SendBulk(client, batch, true);
        break;
      case Channel::kNdjson:
        SendNdjson(client, batch);
        break;
      case Channel::kBeats:
        SendBeats(server.beats_port(), batch, false);
        break;
      case Channel::kBeatsCompressed:
        SendBeats(server.beats_port(), batch, true);
        break;
    }
  }
}

// --- Reading back ---------------------------------------------------------------

std::int64_t Count(HttpClient& client, const std::string& q) {
  const auto res = client.Get("/api/v1/search?track_total_hits=true&q=" + UrlEncode(q));
  EXPECT_EQ(res.status, 200) << q << ": " << res.body;
  if (res.status != 200) return -1;
  return json::parse(res.body).at("total").as_int64();
}

// The raw _source of every hit of `q`, following next_cursor.
std::vector<std::string> AllRawSources(HttpClient& client, const std::string& q = "*") {
  std::vector<std::string> out;
  std::string cursor;
  for (int pages = 0; pages < 1000; ++pages) {
    const auto res =
        client.Get("/api/v1/search?limit=1000&q=" + UrlEncode(q) + "&cursor=" + cursor);
    EXPECT_EQ(res.status, 200) << res.body;
    if (res.status != 200) break;
    const json::value v = json::parse(res.body);
    const auto raw = RawSources(res.body);
    EXPECT_EQ(raw.size(), v.at("hits").as_array().size());
    out.insert(out.end(), raw.begin(), raw.end());
    if (v.at("next_cursor").is_null()) break;
    cursor = std::string(v.at("next_cursor").as_string());
  }
  return out;
}

// A document's "seq" member (a number, or a string from a v1 data frame).
std::string SeqOf(const json::value& doc) {
  const auto* seq = doc.as_object().if_contains("seq");
  if (!seq) return "";
  return seq->is_string() ? std::string(seq->as_string()) : json::serialize(*seq);
}

// Every stored document's raw _source, by its "seq".
std::map<std::string, std::string> StoredBySeq(HttpClient& client) {
  std::map<std::string, std::string> out;
  for (auto& raw : AllRawSources(client)) {
    const std::string seq = SeqOf(json::parse(raw));
    EXPECT_TRUE(out.emplace(seq, std::move(raw)).second) << "two documents with seq " << seq;
  }
  return out;
}

// dashcam_redactions_total by rule, from /metrics.
std::map<std::string, std::int64_t> RedactionCounts(HttpClient& client) {
  constexpr std::string_view kPrefix = "dashcam_redactions_total{rule=\"";
  std::map<std::string, std::int64_t> out;
  std::istringstream in(client.Get("/metrics").body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const auto name_end = line.find('"', kPrefix.size());
    const auto value_at = line.find("} ", name_end);
    if (name_end == std::string::npos || value_at == std::string::npos) continue;
    out[line.substr(kPrefix.size(), name_end - kPrefix.size())] =
        std::stoll(line.substr(value_at + 2));
  }
  return out;
}

// --- Leak detection ---------------------------------------------------------------

// What must not appear in stored bytes: each secret as sent and as JSON
// escapes it, and each long letter-and-digit run of it, which is how the
// FTS index keeps tokens (also the run's last 12 bytes, since FTS5 stores a
// term as a suffix of the previous one). Compared lowercase, as the index
// lowercases. Runs that also occur in `clean` (text that is no secret) are
// left out.
std::vector<std::string> LeakNeedles(const std::vector<std::string>& secrets,
                                     const std::string& clean) {
  const std::string clean_lower = Lower(clean);
  std::set<std::string> needles;
  for (const auto& s : secrets) {
    needles.insert(Lower(s));
    const std::string escaped = json::serialize(json::string(s));
    needles.insert(Lower(escaped.substr(1, escaped.size() - 2)));
    std::string run;
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) {
        run.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i]))));
        continue;
      }
      if (run.size() >= 10 && clean_lower.find(run) == std::string::npos) needles.insert(run);
      if (run.size() >= 16) needles.insert(run.substr(run.size() - 12));
      run.clear();
    }
  }
  return {needles.begin(), needles.end()};
}

// The needles found in `bytes`.
std::vector<std::string> Leaks(std::string_view bytes, const std::vector<std::string>& needles) {
  const std::string lower = Lower(bytes);
  std::vector<std::string> found;
  for (const auto& n : needles) {
    if (lower.find(n) != std::string::npos) found.push_back(n);
  }
  return found;
}

// Reads every regular file under `dir` as raw bytes and expects no needle in
// any. Returns the names of the files read.
std::vector<std::string> ExpectNoLeaksInFiles(const std::string& dir,
                                              const std::vector<std::string>& needles) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    names.push_back(entry.path().filename().string());
    const std::string bytes = ReadFile(entry.path());
    for (const auto& leak : Leaks(bytes, needles)) {
      ADD_FAILURE() << entry.path() << " (" << bytes.size() << " bytes) contains '" << leak << "'";
    }
  }
  return names;
}

// Reads every stored document of the partitions under `dir` as the server
// reads it (decompressed: source_codec.h; the raw-bytes scan above cannot
// see into a compressed one) and expects no needle in any. Returns how many
// documents were stored compressed.
int ExpectNoLeaksInDocuments(const std::string& dir, const std::vector<std::string>& needles) {
  int compressed = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".db") continue;
    storage::Db db;
    EXPECT_TRUE(db.Open(entry.path().string(), SQLITE_OPEN_READONLY).ok()) << entry.path();
    EXPECT_TRUE(storage::RegisterSourceFunction(db.get()).ok());
    auto stmt = db.Prepare("SELECT source, dc_source(source) FROM events");
    EXPECT_TRUE(stmt.ok()) << entry.path();
    if (!stmt.ok()) continue;
    int rc;
    while ((rc = stmt->Step()) == SQLITE_ROW) {
      compressed += storage::IsCompressedSource(stmt->Blob(0));
      for (const auto& leak : Leaks(stmt->Blob(1), needles)) {
        ADD_FAILURE() << entry.path() << ": a stored document contains '" << leak << "'";
      }
    }
    EXPECT_EQ(rc, SQLITE_DONE) << entry.path() << ": " << sqlite3_errmsg(db.get());
  }
  return compressed;
}

// --- The corpus -------------------------------------------------------------------

// Where an event carries its planted secret.
enum class Shape { kMessage, kSecretField, kNestedField, kArray };
constexpr int kShapes = 4;

// Secret-named fields, for Shape::kSecretField: parent object, name, and
// whether the value is an Authorization header ("Bearer <secret>").
struct SecretField {
  const char* parent;
  const char* name;
  bool bearer;
};
constexpr SecretField kSecretFields[] = {
    {"env", "WANDB_API_KEY", false},   {"env", "password", false},      {"env", "api_key", false},
    {"env", "token", false},           {"env", "client_secret", false}, {"env", "HF_TOKEN", false},
    {"headers", "authorization", true}};

// One event: what is sent, and what must be stored.
struct CorpusEvent {
  std::string seq;
  std::string json;                  // as sent
  json::value expected;              // the stored document
  std::vector<std::string> queries;  // searches that must find nothing
};

json::object& Obj(json::value& v) {
  return v.as_object();
}

CorpusEvent MakeEvent(std::int64_t seq, const PlantedSecret& p, Shape shape,
                      const std::string& ts) {
  CorpusEvent e;
  e.seq = std::to_string(seq);
  json::value doc = json::object{{"@timestamp", ts}, {"seq", seq}};
  json::value want;
  std::string rule = p.rule;
  const std::string secret_phrase = Phrase(SearchableSecret(p));
  e.queries.push_back(secret_phrase);  // on the message
  switch (shape) {
    case Shape::kMessage:
      Obj(doc)["message"] = p.text;
      want = doc;
      Obj(want)["message"] = MaskedText(p);
      break;
    case Shape::kSecretField: {
      const SecretField& f =
          kSecretFields[static_cast<std::size_t>(seq) % std::size(kSecretFields)];
      const std::string value = f.bearer ? "Bearer " + p.secret : p.secret;
      Obj(doc)["message"] = "job environment dump";
      const json::object inner = f.bearer ? json::object{{"accept", "*/*"}, {f.name, value}}
                                          : json::object{{f.name, value}, {"HOME", "/home/alice"}};
      Obj(doc)["req"] = json::object{{f.parent, inner}};
      want = doc;
      Obj(want)["req"].as_object()[f.parent].as_object()[f.name] = Mask("secret_field");
      rule = "secret_field";
      e.queries.push_back("req." + std::string(f.parent) + "." + f.name + ":" + Phrase(value));
      break;
    }
    case Shape::kNestedField:
      Obj(doc)["message"] = "launching job";
      Obj(doc)["job"] = json::object{{"cmd", p.text}, {"attempt", 2}};
      want = doc;
      Obj(want)["job"].as_object()["cmd"] = MaskedText(p);
      e.queries.push_back("job.cmd:" + secret_phrase);
      break;
    case Shape::kArray:
      Obj(doc)["message"] = "argv and notes";
      Obj(doc)["args"] = json::array{"--lr", "3e-4", p.text};
      Obj(doc)["notes"] = json::array{json::object{{"text", p.text}}, 7, nullptr};
      want = doc;
      Obj(want)["args"].as_array()[2] = MaskedText(p);
      Obj(want)["notes"].as_array()[0].as_object()["text"] = MaskedText(p);
      e.queries.push_back("args:" + secret_phrase);
      e.queries.push_back("notes.text:" + secret_phrase);
      break;
  }
  e.json = json::serialize(doc);
  Obj(want)["redacted"] = json::array{json::string(rule)};
  e.expected = std::move(want);
  return e;
}

// Every planted secret in every shape: 4 events per secret.
std::vector<CorpusEvent> BuildCorpus(const std::vector<PlantedSecret>& secrets) {
  const std::string ts = NowRfc3339();
  std::vector<CorpusEvent> out;
  std::int64_t seq = 0;
  for (const auto& p : secrets) {
    for (int s = 0; s < kShapes; ++s) out.push_back(MakeEvent(++seq, p, static_cast<Shape>(s), ts));
  }
  return out;
}

std::vector<std::string> Docs(const std::vector<CorpusEvent>& events) {
  std::vector<std::string> docs;
  for (const auto& e : events) docs.push_back(e.json);
  return docs;
}

std::vector<std::string> Secrets(const std::vector<PlantedSecret>& planted) {
  std::vector<std::string> out;
  for (const auto& p : planted) out.push_back(p.secret);
  return out;
}

// Text sent beside the secrets that is no secret: the planted lines as
// masked, and the ordinary lines.
std::string CleanText(const std::vector<PlantedSecret>& planted) {
  std::string clean;
  for (const auto& p : planted) clean += MaskedText(p) + "\n";
  for (const auto& line : OrdinaryLogLines()) clean += line + "\n";
  return clean;
}

// Beats v1 data frames (key/value strings) with a secret in the message and
// in a secret-named key; seq is the string "v1-<i>".
std::string V1Window(const std::vector<PlantedSecret>& planted, std::size_t n) {
  std::string frames;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = planted[i * 7 % planted.size()];
    frames += DataFrame(
        static_cast<std::uint32_t>(i + 1),
        {{"message", p.text}, {"seq", "v1-" + std::to_string(i)}, {"db_password", p.secret}});
  }
  return WindowFrame(static_cast<std::uint32_t>(n), '1') + CompressedFrame(frames, '1');
}

// --- Fixtures ---------------------------------------------------------------------

class RedactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!rules_yaml_.empty()) {
      const std::string rules_path = dir_.path() + "/rules.yml";
      std::ofstream(rules_path) << rules_yaml_;
      extra_args_.insert(extra_args_.end(), {"--redaction-rules", rules_path});
    }
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", extra_args_);
    ASSERT_TRUE(server_->Start()) << server_->error() << "\n" << server_->ReadLog();
    ASSERT_NE(server_->beats_port(), 0) << server_->ReadLog();
  }
  void TearDown() override {
    if (server_ && server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  HttpClient Client() { return HttpClient("127.0.0.1", server_->port()); }
  std::string data_dir() const { return dir_.path() + "/data"; }

  TempDir dir_;
  std::vector<std::string> extra_args_;
  std::string rules_yaml_;
  std::unique_ptr<TestServer> server_;
};

// Checks that `stored` (raw _source by seq) holds each event as expected.
void ExpectStoredAsExpected(const std::vector<CorpusEvent>& events,
                            const std::map<std::string, std::string>& stored) {
  for (const auto& e : events) {
    const auto it = stored.find(e.seq);
    if (it == stored.end()) {
      ADD_FAILURE() << "seq " << e.seq << " not stored; sent " << e.json;
      continue;
    }
    EXPECT_EQ(json::parse(WithoutServerAdditions(it->second)), e.expected)
        << "sent:     " << e.json << "\nstored:   " << it->second
        << "\nexpected: " << json::serialize(e.expected);
  }
}

TEST_F(RedactionTest, PlantedSecretsAreMaskedInStorageSearchLogsAndFiles) {
  const auto planted = PlantedSecrets();
  ASSERT_GE(planted.size(), 40u);
  const auto events = BuildCorpus(planted);
  ASSERT_GE(events.size(), 160u);
  // Each shape goes over every channel (4 shapes, 5 channels, coprime).
  SendOverEveryChannel(*server_, Docs(events));
  {
    BeatsClient v1(server_->beats_port());
    ASSERT_TRUE(v1.Send(V1Window(planted, 6)));
    const auto ack = v1.ReadFinalAck(seconds(30));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->seq, 6u);
  }
  auto client = Client();
  const auto stored = StoredBySeq(client);
  ASSERT_EQ(stored.size(), events.size() + 6);

  // (d) Each mask where its secret was, each rule named in `redacted`.
  ExpectStoredAsExpected(events, stored);
  for (std::size_t i = 0; i < 6; ++i) {
    const auto& p = planted[i * 7 % planted.size()];
    const std::string& raw = stored.at("v1-" + std::to_string(i));
    const json::value doc = json::parse(raw);
    EXPECT_EQ(doc.at("message"), json::value(MaskedText(p))) << raw;
    EXPECT_EQ(doc.at("db_password"), json::value(Mask("secret_field"))) << raw;
    EXPECT_EQ(doc.at("redacted"), (json::array{json::string(p.rule), "secret_field"})) << raw;
  }

  // `redacted:<rule>` finds exactly the events the rule fired on.
  std::map<std::string, std::set<std::string>> by_rule;
  for (const auto& [seq, raw] : stored) {
    const json::value doc = json::parse(raw);
    for (const auto& r : doc.at("redacted").as_array()) {
      by_rule[std::string(r.as_string())].insert(seq);
    }
  }
  for (const auto& p : planted) ASSERT_TRUE(by_rule.count(p.rule)) << p.rule;
  for (const auto& [rule, seqs] : by_rule) {
    std::set<std::string> found;
    for (const auto& raw : AllRawSources(client, "redacted:" + rule)) {
      found.insert(SeqOf(json::parse(raw)));
    }
    EXPECT_EQ(found, seqs) << "redacted:" << rule;
  }

  // /metrics counts each mask once, under its rule.
  const auto counts = RedactionCounts(client);
  for (const auto& [rule, seqs] : by_rule) {
    std::int64_t masks = 0;
    for (const auto& [seq, raw] : stored)
      masks += static_cast<std::int64_t>(CountOf(raw, Mask(rule)));
    EXPECT_EQ(counts.count(rule) ? counts.at(rule) : -1, masks) << rule;
  }

  // (a) Searching for a secret, where it was planted, finds nothing.
  for (const auto& e : events) {
    for (const auto& q : e.queries) EXPECT_EQ(Count(client, q), 0) << q;
  }

  // The rules endpoint, asked after all this, shows no secret either.
  const auto needles = LeakNeedles(Secrets(planted), CleanText(planted));
  const auto rules = client.Get("/api/v1/redaction/rules");
  EXPECT_EQ(rules.status, 200);
  EXPECT_EQ(Leaks(rules.body, needles), std::vector<std::string>{});

  // (b) No file of the data directory holds a secret: while running (the
  // WAL holds the recent commits) and after a clean stop.
  const auto running = ExpectNoLeaksInFiles(data_dir(), needles);
  EXPECT_TRUE(std::any_of(running.begin(), running.end(), [](const std::string& f) {
    return f.ends_with("-wal");
  })) << "no WAL file among the files read";
  // (c) Nor does the server's log.
  EXPECT_EQ(Leaks(server_->ReadLog(), needles), std::vector<std::string>{});
  ASSERT_EQ(server_->Stop(SIGTERM), 0) << server_->ReadLog();
  const auto stopped = ExpectNoLeaksInFiles(data_dir(), needles);
  EXPECT_FALSE(stopped.empty());
  EXPECT_EQ(Leaks(server_->ReadLog(), needles), std::vector<std::string>{});
  // (d) Nor does any stored document, most of which are compressed.
  EXPECT_GT(ExpectNoLeaksInDocuments(data_dir(), needles), 0);
}

TEST_F(RedactionTest, OrdinaryTrainingLogsAreStoredByteForByte) {
  const std::string ts = NowRfc3339();
  std::vector<std::string> docs;
  for (const auto& line : OrdinaryLogLines()) {
    docs.push_back(json::serialize(json::object{{"@timestamp", ts}, {"message", line}}));
    docs.push_back(json::serialize(json::object{{"@timestamp", ts},
                                                {"message", "argv"},
                                                {"job", {{"cmd", line}}},
                                                {"args", json::array{"-v", line}}}));
  }
  for (const auto& doc : OrdinaryJsonDocuments()) docs.push_back(doc);
  GeneratorOptions opts;
  opts.seed = 17;
  opts.expected_events = 400;
  TrainingLogGenerator gen(opts);
  for (int i = 0; i < 400; ++i) {
    // The generator's Jupyter lines carry real-looking ?token= values:
    // secrets, masked by design, so not part of this corpus.
    auto e = gen.Next();
    if (e.message.find("token=") == std::string::npos) docs.push_back(std::move(e.json));
  }
  ASSERT_GE(docs.size(), 500u);
  SendOverEveryChannel(*server_, docs);

  auto client = Client();
  // Byte for byte but for what the detectors add (insight, run, train).
  std::multiset<std::string> stored;
  for (const auto& source : AllRawSources(client)) stored.insert(WithoutServerAdditions(source));
  const std::multiset<std::string> sent(docs.begin(), docs.end());
  std::vector<std::string> changed, unexpected;
  std::set_difference(sent.begin(), sent.end(), stored.begin(), stored.end(),
                      std::back_inserter(changed));
  std::set_difference(stored.begin(), stored.end(), sent.begin(), sent.end(),
                      std::back_inserter(unexpected));
  EXPECT_EQ(changed, std::vector<std::string>{}) << "sent, not stored byte for byte";
  EXPECT_EQ(unexpected, std::vector<std::string>{}) << "stored, never sent";
  for (const auto& [rule, n] : RedactionCounts(client)) EXPECT_EQ(n, 0) << rule;
}

TEST_F(RedactionTest, RejectedItemsReportTheirProblemWithoutTheSecret) {
  const std::string hex = "9f86d081884c7d659a2feaa0c55ad015";
  const std::string hf = "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g";
  const std::vector<std::string> secrets = {hex, hf};
  const std::string bad_time = R"({"@timestamp":"token=)" + hex + R"(","message":"x"})";
  const std::string broken = R"({"message":"export HF_TOKEN=)" + hf + R"(" oops})";
  auto client = Client();

  const std::string bulk = std::string(R"({"index":{}})") + "\n" + bad_time + "\n" +
                           R"({"index":{}})" + "\n" + broken + "\n" + R"({"index":{}})" + "\n" +
                           R"({"message":"fine"})" + "\n";
  const auto res =
      client.Post("/redact-rejects/_bulk", bulk, {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(res.status, 200) << res.body;
  const json::value v = json::parse(res.body);
  const auto& items = v.at("items").as_array();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].at("index").at("status").as_int64(), 400);
  EXPECT_NE(json::serialize(items[0]).find("@timestamp"), std::string::npos) << res.body;
  EXPECT_EQ(items[1].at("index").at("status").as_int64(), 400);
  EXPECT_EQ(items[2].at("index").at("status").as_int64(), 201);
  EXPECT_EQ(Leaks(res.body, secrets), std::vector<std::string>{}) << res.body;

  const auto nd = client.Post("/api/v1/ingest", bad_time + "\n" + broken + "\n");
  ASSERT_EQ(nd.status, 200) << nd.body;
  EXPECT_EQ(json::parse(nd.body).at("rejected").as_int64(), 2) << nd.body;
  EXPECT_EQ(Leaks(nd.body, secrets), std::vector<std::string>{}) << nd.body;

  {
    BeatsClient beats(server_->beats_port());
    ASSERT_TRUE(beats.Send(WindowFrame(1) + JsonFrame(1, broken)));
    EXPECT_TRUE(beats.WaitClosed(seconds(10)));
  }
  const std::string log = server_->ReadLog();
  EXPECT_NE(log.find("bulk_item_rejected"), std::string::npos);
  EXPECT_EQ(Leaks(log, secrets), std::vector<std::string>{}) << log;
  EXPECT_EQ(Count(client, "fine"), 1);
}

TEST_F(RedactionTest, AClientCannotSetOrHideTheRedactedField) {
  const std::vector<std::string> docs = {
      R"({"message":"clean","redacted":["jupyter_token"]})",
      R"({"message":"lab?token=0c722e11346231bf8da596117f292521","redacted":[]})",
      R"({"message":"nested is not ours","meta":{"redacted":["x"]}})",
  };
  auto client = Client();
  SendNdjson(client, docs);
  std::map<std::string, json::value> by_message;
  for (const auto& raw : AllRawSources(client)) {
    const json::value doc = json::parse(raw);
    by_message[std::string(doc.at("message").as_string())] = doc;
  }
  ASSERT_EQ(by_message.size(), 3u);
  EXPECT_EQ(by_message.at("clean"), json::parse(R"({"message":"clean"})"));
  EXPECT_EQ(by_message.at("lab?token=[REDACTED:jupyter_token]"),
            json::parse(R"({"message":"lab?token=[REDACTED:jupyter_token]",)"
                        R"("redacted":["jupyter_token"]})"));
  EXPECT_EQ(by_message.at("nested is not ours"), json::parse(docs[2]));
  EXPECT_EQ(Count(client, "redacted:jupyter_token"), 1);
}

TEST_F(RedactionTest, MetricsCountMasksPerRule) {
  const std::vector<std::string> docs = {
      R"({"message":"http://a:8888/lab?token=0c722e11346231bf8da5 and http://b:8888/?token=f2686cfdd971c684583c"})",
      R"({"message":"push with ghp_B4r6bSr0pFBOPCWBRDFOxEzf5FJtRBZRAJyu"})",
      R"({"message":"login","password":"hunter2hunter2","db":{"api_key":12345678901234}})",
      R"({"message":"nothing to see"})",
  };
  auto client = Client();
  SendNdjson(client, docs);
  const auto counts = RedactionCounts(client);
  ASSERT_FALSE(counts.empty()) << client.Get("/metrics").body;
  const std::map<std::string, std::int64_t> want = {
      {"jupyter_token", 2}, {"github_token", 1}, {"secret_field", 2}};
  for (const auto& [rule, n] : counts) {
    EXPECT_EQ(n, want.count(rule) ? want.at(rule) : 0) << rule;
  }
  for (const auto& [rule, n] : want) EXPECT_TRUE(counts.count(rule)) << rule;
  EXPECT_EQ(Count(client, "redacted:jupyter_token"), 1);
  EXPECT_EQ(Count(client, "redacted:secret_field"), 1);
}

TEST_F(RedactionTest, RulesEndpointListsNamesAndPatternsAndNeverAValue) {
  const auto planted = PlantedSecrets();
  std::vector<std::string> docs;
  for (const auto& p : planted) docs.push_back(json::serialize(json::object{{"message", p.text}}));
  auto client = Client();
  SendNdjson(client, docs);

  const auto res = client.Get("/api/v1/redaction/rules");
  ASSERT_EQ(res.status, 200) << res.body;
  const json::value v = json::parse(res.body);
  EXPECT_EQ(v.at("enabled"), json::value(true));
  EXPECT_TRUE(v.at("fields").is_array());
  std::set<std::string> names;
  for (const auto& r : v.at("rules").as_array()) {
    const std::string name(r.at("name").as_string());
    names.insert(name);
    EXPECT_TRUE(r.at("builtin").as_bool()) << name;
    if (name != "secret_field") {
      EXPECT_FALSE(r.at("pattern").as_string().empty()) << name;
    }
  }
  for (const auto& p : planted) EXPECT_TRUE(names.count(p.rule)) << p.rule;
  EXPECT_TRUE(names.count("secret_field"));
  EXPECT_EQ(Leaks(res.body, LeakNeedles(Secrets(planted), CleanText(planted))),
            std::vector<std::string>{});
}

// --- A rules file ------------------------------------------------------------------

class RedactionRulesFileTest : public RedactionTest {
 protected:
  RedactionRulesFileTest() {
    rules_yaml_ =
        "rules:\n"
        "  - name: lab_vault_token\n"
        "    pattern: 'hvs\\.[A-Za-z0-9]{24,}'\n"
        "  - name: run_signing_key\n"
        "    pattern: 'signing-key/(?P<secret>[0-9a-f]{32})'\n"
        "    group: secret\n"
        "disable: [aws_access_key_id]\n"
        "fields: [session_cookie, X-Lab-Ticket]\n";
  }
};

TEST_F(RedactionRulesFileTest, AddsRulesWithGroupsDisablesDefaultsAndMasksFields) {
  const std::string ts = NowRfc3339();
  const auto doc = [&](std::string message, json::object extra = {}) {
    extra["@timestamp"] = ts;
    extra["message"] = std::move(message);
    return json::serialize(extra);
  };
  const std::vector<std::string> docs = {
      doc("vault login hvs.CAESIJ1xsU2kq9fE3rWbLm0PzTyA8nGd ok"),
      doc("fetched signing-key/0123456789abcdef0fedcba987654321 for run 17"),
      doc("aws configure set aws_access_key_id AKIAIDVWTFKTANGPVYQE"),
      doc("cookies", {{"session_cookie", "c2Vzc2lvbi0xMjM0NTY3ODk"}, {"x-lab-ticket", 99887766}}),
      doc("http://gpu-node-07:8888/lab?token=0c722e11346231bf8da596117f292521"),
  };
  auto client = Client();
  SendNdjson(client, docs);
  std::vector<std::string> raws = AllRawSources(client);
  ASSERT_EQ(raws.size(), docs.size());
  std::map<std::string, std::string> by_message;
  for (const auto& raw : raws) {
    by_message[std::string(json::parse(raw).at("message").as_string())] = raw;
  }
  const auto stored = [&](const std::string& message) {
    const auto it = by_message.find(message);
    return it == by_message.end() ? json::value() : json::parse(it->second);
  };
  const auto expect = [&](std::string message, json::object extra, json::array rules) {
    extra["@timestamp"] = ts;
    extra["message"] = message;
    extra["redacted"] = std::move(rules);
    EXPECT_EQ(stored(message), json::value(extra)) << message;
  };
  expect("vault login [REDACTED:lab_vault_token] ok", {}, {"lab_vault_token"});
  expect("fetched signing-key/[REDACTED:run_signing_key] for run 17", {}, {"run_signing_key"});
  expect(
      "cookies",
      {{"session_cookie", "[REDACTED:secret_field]"}, {"x-lab-ticket", "[REDACTED:secret_field]"}},
      {"secret_field"});
  expect("http://gpu-node-07:8888/lab?token=[REDACTED:jupyter_token]", {}, {"jupyter_token"});
  // The disabled rule masks nothing: stored byte for byte.
  EXPECT_EQ(by_message["aws configure set aws_access_key_id AKIAIDVWTFKTANGPVYQE"], docs[2]);

  const json::value rules = json::parse(client.Get("/api/v1/redaction/rules").body);
  std::map<std::string, json::value> by_name;
  for (const auto& r : rules.at("rules").as_array()) {
    by_name[std::string(r.at("name").as_string())] = r;
  }
  EXPECT_FALSE(by_name.count("aws_access_key_id"));
  EXPECT_TRUE(by_name.count("jupyter_token"));
  EXPECT_EQ(by_name["lab_vault_token"],
            json::parse(R"({"name":"lab_vault_token","pattern":"hvs\\.[A-Za-z0-9]{24,}",)"
                        R"("group":"","builtin":false})"));
  EXPECT_EQ(by_name["run_signing_key"],
            json::parse(R"({"name":"run_signing_key",)"
                        R"j("pattern":"signing-key/(?P<secret>[0-9a-f]{32})",)j"
                        R"("group":"secret","builtin":false})"));
  std::set<std::string> fields;
  for (const auto& f : rules.at("fields").as_array()) fields.insert(Lower(f.as_string()));
  EXPECT_EQ(fields, (std::set<std::string>{"session_cookie", "x-lab-ticket"}));

  const auto counts = RedactionCounts(client);
  EXPECT_EQ(counts.at("lab_vault_token"), 1);
  EXPECT_EQ(counts.at("run_signing_key"), 1);
  EXPECT_EQ(counts.at("secret_field"), 2);
  EXPECT_FALSE(counts.count("aws_access_key_id"));
  EXPECT_EQ(Count(client, "redacted:run_signing_key"), 1);
}

TEST(RedactionStartupTest, InvalidRulesFileStopsStartupNamingTheRule) {
  struct Case {
    std::string yaml;
    std::vector<std::string> in_error;  // each must appear in the bad_config line
  };
  const std::vector<Case> cases = {
      {"rules:\n  - name: broken_rule\n    pattern: 'foo(bar'\n", {"broken_rule", "missing )"}},
      {"rules:\n  - name: bad_repeat\n    pattern: 'a**'\n", {"bad_repeat", "bad repetition"}},
      {"rules:\n  - name: no_group\n    pattern: 'key=(?P<value>\\w+)'\n    group: secret\n",
       {"no_group", "secret"}},
      {"disable: [no_such_rule]\n", {"no_such_rule"}},
      {"rules: [\n", {"redaction rules"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].yaml);
    TempDir dir;
    const std::string rules_path = dir.path() + "/rules.yml";
    std::ofstream(rules_path) << cases[i].yaml;
    TestServer server(dir.path() + "/data", {"--redaction-rules", rules_path});
    EXPECT_FALSE(server.Start());
    ASSERT_TRUE(server.exit_status()) << server.ReadLog();
    EXPECT_EQ(server.exit_status()->ToString(), "exit code 2") << server.ReadLog();
    std::string bad_config;
    std::istringstream log(server.ReadLog());
    for (std::string line; std::getline(log, line);) {
      if (line.find("\"event\":\"bad_config\"") != std::string::npos) bad_config = line;
    }
    ASSERT_FALSE(bad_config.empty()) << server.ReadLog();
    EXPECT_NE(bad_config.find("\"level\":\"error\""), std::string::npos) << bad_config;
    for (const auto& want : cases[i].in_error) {
      EXPECT_NE(bad_config.find(want), std::string::npos) << want << " in " << bad_config;
    }
  }
}

// --- --no-redaction ------------------------------------------------------------------

class NoRedactionTest : public RedactionTest {
 protected:
  NoRedactionTest() { extra_args_ = {"--no-redaction"}; }
};

TEST_F(NoRedactionTest, WarnsAtStartupAndStoresEverythingAsSent) {
  std::string warning;
  std::istringstream log(server_->ReadLog());
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\":\"redaction_disabled\"") != std::string::npos) warning = line;
  }
  EXPECT_NE(warning.find("\"level\":\"warn\""), std::string::npos) << server_->ReadLog();

  // The corpus of the first test, stored raw: also shows that the searches
  // that find nothing there do find the secrets when they are stored.
  const auto planted = PlantedSecrets();
  const auto events = BuildCorpus(planted);
  SendOverEveryChannel(*server_, Docs(events), 2);
  auto client = Client();
  const auto stored = StoredBySeq(client);
  ASSERT_EQ(stored.size(), events.size());
  for (const auto& e : events) {
    EXPECT_EQ(WithoutServerAdditions(stored.at(e.seq)), e.json);
    // queries[0] is on the message, which holds the secret in one shape only.
    for (std::size_t i = 1; i < e.queries.size(); ++i) {
      EXPECT_GE(Count(client, e.queries[i]), 1) << e.queries[i];
    }
  }
  for (const auto& p : planted) {
    EXPECT_GE(Count(client, Phrase(SearchableSecret(p))), 1) << SearchableSecret(p);
  }

  const json::value rules = json::parse(client.Get("/api/v1/redaction/rules").body);
  EXPECT_EQ(rules.at("enabled"), json::value(false));
  EXPECT_TRUE(rules.at("rules").as_array().empty());
  for (const auto& [rule, n] : RedactionCounts(client)) EXPECT_EQ(n, 0) << rule;
}

}  // namespace
}  // namespace dashcam::testing::redaction_test
