// published.hpp: `gradsync validate --published`: gradsync against the published nccl-tests
// table (sim/published.hpp), a table per case and size and a summary per validation class.
#pragma once

#include <ostream>
#include <string>

namespace gradsync::apps {

struct PublishedArgs {
  std::string file;  // empty: the table compiled in
  std::string only;  // --case ID: this case only
  std::string csv;   // --csv FILE: every point as CSV
  // --confidence FILE: per validation class of step times, the median and worst error of the
  // training and DDP tables (sim/confidence.hpp; what validation/published/confidence.csv ships).
  std::string confidence;
  int jobs = 1;
};

void run_published(const PublishedArgs& a, std::ostream& out);

}  // namespace gradsync::apps
