// Tests for storage/docno_keys.h: blocks of keys read back exactly, whatever
// the gaps and sequence numbers; the SQL functions find every docno's key
// and every bound a binary search over the keys would (DocnoBoundSql over a
// real table); a damaged block fails the statement instead of giving a key.
#include "storage/docno_keys.h"

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/partition.h"
#include "storage/rowid_layout.h"

namespace dashcam::storage {
namespace {

constexpr TimeMs kT0 = 20786 * kMsPerDay;  // 2026-11-29

// `n` rising keys: mostly a few ms apart with sequence 0, some sharing a
// millisecond, some far apart (a quiet night), some with a large sequence.
std::vector<EventKey> RisingKeys(std::mt19937_64& rng, std::size_t n) {
  std::vector<EventKey> keys;
  TimeMs ms = kT0;
  std::uint32_t seq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned pick = rng() % 20;
    if (i > 0 && pick == 0) {
      ++seq;  // the same millisecond
    } else if (i > 0 && pick == 1) {
      seq += static_cast<std::uint32_t>(rng() % 1000) + 1;
      seq = std::min(seq, kMaxSeq);
    } else {
      ms += pick == 2 ? static_cast<TimeMs>(rng() % 40'000'000) : static_cast<TimeMs>(rng() % 90);
      ms += 1;
      seq = pick == 3 ? static_cast<std::uint32_t>(rng() % kMaxSeq) : 0;
    }
    keys.push_back(FirstKeyAt(ms) | seq);
  }
  return keys;
}

TEST(DocnoKeysTest, BlocksReadBackExactly) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {1, 2, 3, 64, 127, 128}) {
    for (int round = 0; round < 50; ++round) {
      const std::vector<EventKey> keys = RisingKeys(rng, n);
      const std::string blob = EncodeDocnoBlock(keys);
      std::vector<EventKey> back;
      ASSERT_TRUE(DecodeDocnoBlock(blob, back)) << n;
      ASSERT_EQ(back, keys) << n;
    }
  }
  // What a second apart costs: two bytes a key after the count and the first.
  std::vector<EventKey> seconds;
  for (int i = 0; i < 128; ++i) seconds.push_back(FirstKeyAt(kT0 + 1000 * i));
  EXPECT_EQ(EncodeDocnoBlock(seconds).size(), 2u + 9u + 127u * 2u);
}

TEST(DocnoKeysTest, DamagedBlocksAreRefused) {
  std::mt19937_64 rng(8);
  const std::vector<EventKey> keys = RisingKeys(rng, 128);
  const std::string blob = EncodeDocnoBlock(keys);
  std::vector<EventKey> out;
  // Cut inside a varint: its last byte has the high bit set.
  std::string cut = blob;
  while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0x80) == 0) cut.pop_back();
  ASSERT_FALSE(cut.empty());
  EXPECT_FALSE(DecodeDocnoBlock(cut, out));
  // A key past the count, and a count past the keys.
  EXPECT_FALSE(DecodeDocnoBlock(blob + std::string(1, '\x02'), out));
  std::string short_count = EncodeDocnoBlock({keys.data(), 2});
  short_count[0] = 3;
  EXPECT_FALSE(DecodeDocnoBlock(short_count, out));
  // More than a block's keys, or none.
  std::vector<EventKey> many = RisingKeys(rng, 129);
  EXPECT_FALSE(DecodeDocnoBlock(EncodeDocnoBlock(many), out));
  EXPECT_FALSE(DecodeDocnoBlock(std::string(1, '\0'), out));
  // A varint that never ends.
  EXPECT_FALSE(DecodeDocnoBlock(std::string(12, '\xff'), out));
  // A sequence flagged but 0.
  std::string zero_seq = EncodeDocnoBlock({keys.data(), 1});
  zero_seq[0] = 2;
  EXPECT_FALSE(DecodeDocnoBlock(zero_seq + std::string("\x03\x00", 2), out));
}

// A real docno_keys table of `keys`, written by DocnoKeysWriter, read by the
// SQL that statements use (rowid_layout.h).
class DocnoKeysTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(db_.Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).ok());
    ASSERT_TRUE(RegisterDocnoKeyFunctions(db_.get()).ok());
    ASSERT_TRUE(db_.Exec(DocnoKeysTableSql(kDocnoKeysTable)).ok());
  }
  void Write(const std::vector<EventKey>& keys) {
    keys_ = keys;
    DocnoKeysWriter writer(db_, kDocnoKeysTable);
    for (EventKey k : keys) ASSERT_TRUE(writer.Add(k).ok());
    ASSERT_TRUE(writer.Finish().ok());
    layout_ = ParseRowidLayout(DocnosMeta(static_cast<std::int64_t>(keys.size()), 1));
    ASSERT_TRUE(layout_.blocks);
  }
  Result<std::int64_t> One(const std::string& sql, EventKey bind) {
    auto stmt = db_.Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, bind);
    const int rc = stmt->Step();
    if (rc != SQLITE_ROW) return db_.Check(stmt->Reset(), "step");
    return stmt->Int(0);
  }
  // What DocnoBoundSql must give: the first docno with a key >= `key`
  // (> with `after`), N + 1 when none.
  std::int64_t Expected(EventKey key, bool after) const {
    auto it = after ? std::upper_bound(keys_.begin(), keys_.end(), key)
                    : std::lower_bound(keys_.begin(), keys_.end(), key);
    return (it - keys_.begin()) + 1;
  }

  Db db_;
  std::vector<EventKey> keys_;
  RowidLayout layout_;
};

TEST_F(DocnoKeysTableTest, EveryDocnoAndEveryBoundIsFound) {
  std::mt19937_64 rng(9);
  for (std::size_t n : {1, 127, 128, 129, 1000, 1024}) {
    ASSERT_TRUE(db_.Exec(fmt::format("DELETE FROM {}", kDocnoKeysTable)).ok());
    Write(RisingKeys(rng, n));
    const std::string key_of = KeyOfDocnoSql(layout_);
    for (std::size_t d = 1; d <= n; ++d) {
      auto key = One(key_of, static_cast<EventKey>(d));
      ASSERT_TRUE(key.ok()) << key.status().ToString();
      ASSERT_EQ(*key, keys_[d - 1]) << "docno " << d << " of " << n;
    }
    for (bool after : {false, true}) {
      const std::string bound = fmt::format("SELECT {}", DocnoBoundSql(layout_, "?1", after));
      std::vector<EventKey> probes = {keys_.front() - 1, keys_.back() + 1, 0,
                                      std::numeric_limits<EventKey>::max()};
      for (std::size_t i = 0; i<n; i += n> 200 ? 7 : 1) {
        probes.push_back(keys_[i]);
        probes.push_back(keys_[i] - 1);
        probes.push_back(keys_[i] + 1);
      }
      for (EventKey p : probes) {
        auto got = One(bound, p);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(*got, Expected(p, after))
            << "key " << p << (after ? " after" : "") << ", n " << n;
      }
    }
  }
}

TEST_F(DocnoKeysTableTest, ADamagedBlockFailsTheStatement) {
  std::mt19937_64 rng(10);
  Write(RisingKeys(rng, 300));
  // Block 1 (docnos 129..256) cut after its first key: its count (2 bytes)
  // and first key (9) decode, the rest is missing.
  auto cut = db_.Prepare(
      fmt::format("UPDATE {} SET keys = substr(keys, 1, 11) WHERE block = 1", kDocnoKeysTable));
  ASSERT_TRUE(cut.ok());
  ASSERT_EQ(cut->Step(), SQLITE_DONE);
  EXPECT_TRUE(One(KeyOfDocnoSql(layout_), 128).ok());   // block 0 is whole
  EXPECT_FALSE(One(KeyOfDocnoSql(layout_), 129).ok());  // its first key decodes, the block not
  auto missing = One(KeyOfDocnoSql(layout_), 130);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("damaged docno_keys block"), std::string::npos)
      << missing.status().ToString();
  auto bound = One(fmt::format("SELECT {}", DocnoBoundSql(layout_, "?1", false)), keys_[200]);
  EXPECT_FALSE(bound.ok());
}

}  // namespace
}  // namespace dashcam::storage
