// Tests for the keys PartitionWriter gives events (partition.h: the event's
// millisecond << 20 | a sequence number within it): unique, in time order
// whatever order events arrive in, and continuing from a file's stored
// keys when it is opened again.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/partition.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr std::int64_t kKeysDay = 20786;  // 2026-11-29
constexpr TimeMs kT0 = kKeysDay * kMsPerDay + 3'600'000;

class EventKeysTest : public ::testing::Test {
 protected:
  void Open() {
    writer_.reset();
    PartitionOptions o;
    o.sync = SyncMode::kNormal;
    auto w = PartitionWriter::Open(dir_.path() + "/day.db", kKeysDay, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    writer_ = std::move(*w);
  }

  // Writes events at these times in one transaction; their keys.
  std::vector<EventKey> Write(const std::vector<TimeMs>& times) {
    std::vector<Record> records(times.size());
    std::vector<const Record*> ptrs;
    for (std::size_t i = 0; i < times.size(); ++i) {
      records[i].ts_ms = times[i];
      records[i].level = "INFO";
      records[i].message = "line";
      records[i].source = R"({"message":"line"})";
      ptrs.push_back(&records[i]);
    }
    std::vector<RecordOutcome> outcomes(times.size());
    std::vector<EventKey> keys(times.size());
    const Status s = writer_->Write(ptrs, outcomes, keys);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return keys;
  }

  testing::TempDir dir_;
  std::unique_ptr<PartitionWriter> writer_;
};

TEST_F(EventKeysTest, InTimeOrderEachMillisecondCountsFromZero) {
  Open();
  const EventKey a = FirstKeyAt(kT0), b = FirstKeyAt(kT0 + 1);
  EXPECT_EQ(Write({kT0, kT0, kT0 + 1, kT0 + 1, kT0 + 1}),
            (std::vector<EventKey>{a, a + 1, b, b + 1, b + 2}));
  EXPECT_EQ(Write({kT0 + 1, kT0 + 5}), (std::vector<EventKey>{b + 3, FirstKeyAt(kT0 + 5)}));
}

TEST_F(EventKeysTest, AnEarlierMillisecondContinuesFromItsOwnKeys) {
  Open();
  const EventKey a = FirstKeyAt(kT0), b = FirstKeyAt(kT0 + 1), c = FirstKeyAt(kT0 + 2);
  // Interleaved: two shippers, one a millisecond behind.
  EXPECT_EQ(Write({kT0, kT0 + 1, kT0, kT0 + 1, kT0 - 7}),
            (std::vector<EventKey>{a, b, a + 1, b + 1, FirstKeyAt(kT0 - 7)}));
  // In a later transaction, after a newer millisecond: from the stored ones.
  EXPECT_EQ(Write({kT0 + 2, kT0, kT0 + 1, kT0 + 2}),
            (std::vector<EventKey>{c, a + 2, b + 2, c + 1}));
}

TEST_F(EventKeysTest, AReopenedFileContinuesFromItsStoredKeys) {
  Open();
  const EventKey a = FirstKeyAt(kT0), b = FirstKeyAt(kT0 + 1);
  EXPECT_EQ(Write({kT0, kT0 + 1, kT0 + 1}), (std::vector<EventKey>{a, b, b + 1}));
  Open();
  EXPECT_EQ(Write({kT0 + 1, kT0, kT0 + 1}), (std::vector<EventKey>{b + 2, a + 1, b + 3}));
}

}  // namespace
}  // namespace dashcam::storage
