// measured_loader.hpp: reading the `measured:` section that `gradsync models import-trace` adds to
// a model file (a MeasuredStep and each layer's share) into a Model being loaded
// (model_loader.cpp). Errors name the file, line and field.
#pragma once

#include <yaml-cpp/yaml.h>

#include "core/yaml_reader.hpp"
#include "models/model.hpp"

namespace gradsync {

// read_measured_section: `node` into m.measured and each layer's measured_forward_s and
// measured_backward_s; the layers listed by name in the model's order, the parts adding up to
// the step.
void read_measured_section(const YamlReader& r, const YAML::Node& node, Model& m);

}  // namespace gradsync
