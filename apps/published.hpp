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
  int jobs = 1;
};

void run_published(const PublishedArgs& a, std::ostream& out);

}  // namespace gradsync::apps
