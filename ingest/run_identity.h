// RunIdentity: which training run an event belongs to (issue 8, section 2),
// its rank, and whether it is the run's finishing line. Fills the fields
// `run.id`, `run.rank`, `run.end` and Record::group / group_end.
//
// run.id, the first of:
//   1. an explicit field, in this order: `run.id`, `run_id`, `mlflow.run_id`,
//      `mlflow_run_id`, `wandb.run_id`, `wandb_run_id`, `TORCHELASTIC_RUN_ID`,
//      `SLURM_JOB_ID` / `slurm_job_id` (a string or a number);
//   2. `TORCHELASTIC_RUN_ID=...` / `SLURM_JOB_ID=...` printed in the message
//      (a launcher echoing its environment);
//   3. the container: `container.id`, else `container.name` (as Filebeat's
//      add_docker_metadata / container input send them);
//   4. `host.name` + ":" + `log.file.path` (one log file is one run).
// Otherwise none. A value longer than kMaxRunIdBytes is not an id (skipped).
// The most specific source wins: a run id is set by the training code, a
// SLURM job may hold several runs, a container or file is only a proxy.
//
// run.rank: a `run.rank`, `rank` or `RANK` field (an integer, or a string
// holding one), else a "[rank3]:", "[Rank 3]", "[PG 0 Rank 3]" or "rank=3"
// in the message.
//
// run.end "finished": a client-sent `run.end` is kept, and closes the run
// only when it is "finished" (a structured logger knows better than a
// pattern, and a client able to send it could as well send the line).
// Otherwise a table of unambiguous end-of-training lines (run_identity.cpp):
// Hugging Face "Training completed.", Lightning "`Trainer.fit` stopped:
// `max_epochs=N` reached.", "Training finished" / "training complete",
// torchelastic's "worker group successfully finished" / "(WorkerState.
// SUCCEEDED)", "... finished with exit code 0".
//
// Thread-safety: stateless apart from immutable compiled patterns; call
// from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/record.h"

namespace dashcam::ingest {

struct RunIdentity {
  std::string id;              // empty: no run
  bool id_sent = false;        // the event has the field run.id already
  std::optional<double> rank;  // run.rank
  bool rank_sent = false;      // the event has the field run.rank already
  bool finished = false;       // the run's finishing line
  bool end_sent = false;       // the event has the field run.end already
  bool any_run_field = false;  // the event has some run.* field (or `run`)
};

inline constexpr std::size_t kMaxRunIdBytes = 256;

RunIdentity DeriveRunIdentity(std::string_view message, const std::vector<storage::Field>& fields);

// Whether `message` is a finishing line (the table above).
bool IsRunEndLine(std::string_view message);

}  // namespace dashcam::ingest
