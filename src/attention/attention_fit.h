// Training the attention network (libtessera_attention.so): the input
// standardisation fitted to the training programs, and RankNet's pairwise loss
// (log(1 + e^-(s_i - s_j)) for every pair of one group where i is faster)
// minimised by Adam over batches of whole groups.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention_abi.h"
#include "attention/attention_net.h"

namespace tessera::attention {

// Each program of the arrays (rows and row counts, hardware vectors).
std::vector<ProgramView> views_of(const tessera_attention_programs& p);

// The training programs by task group, in the order their groups first appear.
struct Groups {
  std::vector<std::vector<ProgramView>> programs;
  std::vector<std::vector<float>> labels;
  int64_t features = 0, hardware_width = 0;
};
Groups groups_of(const tessera_attention_programs& p);

// Mean and deviation of every input column over the programs into the
// network's buffers (a column that does not vary is left unscaled).
void fit_scaling(Net& net, const Groups& groups);

// `o.epochs` passes of Adam at `o.lr`; with o.anchor > 0 the squared distance
// of the weights from where they start is added to the loss (L2-SP).
void fit(Net& net, const Groups& groups, const tessera_attention_options& o);

}  // namespace tessera::attention
