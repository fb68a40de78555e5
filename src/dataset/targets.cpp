// The targets this machine offers (see targets.h).
#include "dataset/targets.h"

#include <algorithm>
#include <thread>

#include "support/error.h"

namespace tessera::dataset {

std::vector<DatasetTarget> offered_targets(std::vector<std::string>* notes) {
  std::vector<Isa> isas;
  if (host_isa_detected() == Isa::AVX512) isas.push_back(Isa::AVX512);
  else if (notes) notes->push_back("this host has no AVX-512: no avx512 targets");
  if (host_isa_detected() != Isa::Generic) isas.push_back(Isa::AVX2);
  else if (notes) notes->push_back("this host has no AVX2: no targets at all");
  const int cpus = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (cpus < 2 && notes) notes->push_back("this host has one CPU: no 2-thread targets");
  std::vector<DatasetTarget> out;
  for (Isa isa : isas)
    for (int threads = 1; threads <= std::min(2, cpus); ++threads) {
      DatasetTarget t;
      t.name = std::string(isa_name(isa)) + "-t" + std::to_string(threads);
      t.isa = isa;
      t.threads = threads;
      t.target = Target::for_isa(isa);
      t.target.cores = threads;
      out.push_back(std::move(t));
    }
  return out;
}

std::vector<DatasetTarget> select_targets(const std::vector<std::string>& names, std::vector<std::string>* notes) {
  std::vector<DatasetTarget> offered = offered_targets(notes);
  if (names.empty()) return offered;
  std::string known;
  for (const DatasetTarget& t : offered) known += (known.empty() ? "" : ", ") + t.name;
  for (const std::string& n : names) {
    const bool valid = n == "avx512-t1" || n == "avx512-t2" || n == "avx2-t1" || n == "avx2-t2";
    TESSERA_CHECK(valid, "unknown target '", n, "' (targets: avx512-t1, avx512-t2, avx2-t1, avx2-t2)");
    TESSERA_CHECK(std::any_of(offered.begin(), offered.end(), [&](const DatasetTarget& t) { return t.name == n; }),
                  "this machine does not offer target '", n, "' (it offers: ", known, ")");
  }
  std::vector<DatasetTarget> out;
  for (DatasetTarget& t : offered)
    if (std::find(names.begin(), names.end(), t.name) != names.end()) out.push_back(std::move(t));
  return out;
}

void probe(DatasetTarget& t) {
  t.hardware = cost::probe_hardware(t.isa, t.threads);
  t.hardware.name = "host-" + t.name;
}

}  // namespace tessera::dataset
