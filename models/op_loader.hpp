// op_loader.hpp: reading the op-level fields of a format 2 model file (ops.hpp) into a Model
// being loaded (model_loader.cpp). Errors name the file, line, layer and op.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "core/yaml_reader.hpp"
#include "models/model.hpp"

namespace gradsync {

class OpFileReader {
 public:
  OpFileReader(const YamlReader& r, Model& m);
  // read_layer appends the layer's `ops` to the model's and reads its `saved` list and its view
  // calls (`views: [calls, of them on a tensor that requires grad]`).
  void read_layer(const YAML::Node& layer_node, const std::string& where, Layer& layer) const;

 private:
  BatchExpr size(const YAML::Node& n, const std::string& where, const char* key) const;
  OpRef ref(const YAML::Node& n, const std::string& where, std::size_t op_index) const;
  int bytes(const YAML::Node& n, const std::string& where) const;
  // check_gemm_flops: an op's flops and gemm say the same product at the defaults (fails at flops).
  void check_gemm_flops(const Op& op, const YAML::Node& flops_node, const YAML::Node& gemm_node,
                        const std::string& where) const;
  // check_parameter_input: a parameter input reads at most the parameter for B = T = 1 (fails at n).
  void check_parameter_input(const OpInput& in, const YAML::Node& n, const std::string& where) const;
  // check_conv_weight: a convolution's weight input (a parameter) is read whole, and it and the
  // parameter hold out x in/groups x kernel h x kernel w elements (fails at the input's node).
  void check_conv_weight(const Op& op, const YAML::Node& in, const std::string& where) const;

  const YamlReader& r_;
  Model& m_;
};

}  // namespace gradsync
