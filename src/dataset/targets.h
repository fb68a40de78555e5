// The machines a dataset measures on, as this one offers them: AVX-512 code
// (where the host has it) and AVX2 code, each at 1 and 2 threads, so one
// machine yields four targets of a cost model that learns across hardware.
// Each target has its own record target text (Target with cores = its
// threads: records of different targets never mix) and its own hardware
// description (cost/hardware.h, probed at its ISA and threads).
#pragma once

#include <string>
#include <vector>

#include "cost/hardware.h"
#include "support/target.h"

namespace tessera::dataset {

struct DatasetTarget {
  std::string name;  // "avx512-t1", "avx2-t2"
  Isa isa = Isa::AVX2;
  int threads = 1;
  Target target;                // the records' target: Target::for_isa(isa), cores = threads
  cost::HardwareDesc hardware;  // the records' hardware (probe(); named "host-<name>")
};

// The targets this machine offers, in order avx512-t1, avx512-t2, avx2-t1,
// avx2-t2 (not yet probed). What it lacks (AVX-512, a second CPU) is said in
// `notes`.
std::vector<DatasetTarget> offered_targets(std::vector<std::string>* notes);

// The offered targets named in `names` (empty: all), in the offered order;
// throws naming one that is unknown or that this machine does not offer.
std::vector<DatasetTarget> select_targets(const std::vector<std::string>& names, std::vector<std::string>* notes);

// Measures the target's hardware description (cost::probe_hardware at its
// ISA and threads; a few hundred milliseconds).
void probe(DatasetTarget& t);

}  // namespace tessera::dataset
