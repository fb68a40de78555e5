// Schedules from tuning records: for each task, the schedule of its best
// valid record measured on this machine (same Target text; records of other
// machines, and candidates that failed or computed wrong outputs, are never
// applied). What `tessera compile|run|bench --records FILE` use.
#pragma once

#include <memory>
#include <string>

#include "runtime/task_kernel.h"
#include "support/target.h"
#include "tune/record.h"

namespace tessera::tune {

class RecordSchedules final : public runtime::ScheduleProvider {
 public:
  // Reads `path` (throws naming a malformed line); records of `machine` apply.
  RecordSchedules(const std::string& path, const Target& machine);
  // The records of a file already read (a copy: the provider outlives the caller's).
  RecordSchedules(RecordFile file, const Target& machine);
  std::optional<schedule::Schedule> schedule_for(const compile::Task& task) const override;
  const RecordFile& records() const { return file_; }

 private:
  RecordFile file_;
  Target machine_;
  std::string target_;
};

}  // namespace tessera::tune
