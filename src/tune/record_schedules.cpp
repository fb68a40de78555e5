// Schedules from tuning records (see record_schedules.h).
#include "tune/record_schedules.h"

#include <filesystem>
#include <utility>

#include "support/error.h"
#include "tune/task_space.h"

namespace tessera::tune {

namespace {
const std::string& existing(const std::string& path) {
  TESSERA_CHECK(std::filesystem::exists(path), "records file '", path, "' does not exist");
  return path;
}
}  // namespace

RecordSchedules::RecordSchedules(const std::string& path, const Target& machine)
    : RecordSchedules(RecordFile(existing(path)), machine) {}

RecordSchedules::RecordSchedules(RecordFile file, const Target& machine)
    : file_(std::move(file)), machine_(machine), target_(machine.to_string()) {}

std::optional<schedule::Schedule> RecordSchedules::schedule_for(const compile::Task& task) const {
  const Record* best = file_.best(compile::key_text(task.key), target_);
  if (!best || best->schedule.empty()) return std::nullopt;  // none, or the default is best
  std::optional<schedule::Schedule> s = TaskSpace(task, machine_).schedule_at(schedule::SchedulePoint::parse(best->schedule));
  TESSERA_CHECK(s, task.describe(), ": the best record in ", file_.path(), " (task ", best->task_key,
                ") is not a valid point of the task's schedule space");
  return s;
}

}  // namespace tessera::tune
