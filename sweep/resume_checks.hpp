// resume_checks.hpp: what sweep --resume checks before it keeps a folder's points: that the folder
// holds a sweep (not another command's run), and that the files its points read are unchanged.
//
//   check_resumable(dir, out);                  // UsageError: a compare's folder
//   check_inputs(dir, input_digests(files));    // UsageError: a model file edited since
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsync::sweep {

// check_resumable: UsageError when `dir`'s result.json is another command's (compare, simulate,
// advise): its summary.csv rows would read as points of another scenario.
void check_resumable(const std::filesystem::path& dir, const std::string& out);
// input_digests: each file of `files` that exists as a regular file (a model, topology or
// calibration given as a path, not a built-in name), with a digest of its bytes, by path.
nlohmann::ordered_json input_digests(const std::vector<std::string>& files);
// check_inputs: UsageError naming a file whose digest in `dir`'s result.json differs from `now`.
void check_inputs(const std::filesystem::path& dir, const nlohmann::ordered_json& now);

}  // namespace gradsync::sweep
