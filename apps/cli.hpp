// cli.hpp: how the gradsync command is put together: each command family registers its
// subcommands on the CLI11 app, and `run_cli` parses, dispatches and maps errors to exit codes.
//
// A command registers a callback that does the work and throws gradsync::Error on failure; it
// never prints "error:" or exits itself.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "models/model.hpp"

namespace gradsync::apps {

// Registration functions, one per command family (apps/<family>_command.cpp).
void register_models_command(CLI::App& app);
void register_import_trace_command(CLI::App& models);  // models import-trace
// kDefaultShowGpu: the GPU `models show` costs a step on when --gpu is not given, and whose
// roofline `models import-trace` splits a measured step with by default.
inline constexpr const char* kDefaultShowGpu = "a100-sxm4-80gb";

void register_list_command(CLI::App& app);  // list gpus|clusters|models
// print_model_list: the zoo, one row per model (models list, list models).
void print_model_list(std::ostream& out);
void register_buckets_command(CLI::App& app);
void register_topo_command(CLI::App& app);
void register_simulate_commands(CLI::App& app);    // simulate, compare, advise
void register_collectives_command(CLI::App& app);  // collectives
void register_sweep_command(CLI::App& app);        // sweep
void register_real_commands(CLI::App& app);        // bench, calibrate, validate

// kPositiveInteger validates a flag that takes an integer >= 1, with a message that quotes the
// value: "--batch: value \"0\" must be an integer >= 1".
extern const CLI::Validator kPositiveInteger;
// kNonEmptyPath: a file flag given an empty value ("-o ''") is an error, not standard output.
extern const CLI::Validator kNonEmptyPath;
// kNonEmptyFile: the same for a flag whose file is written only when it is given.
extern const CLI::Validator kNonEmptyFile;
// kAnyCase: a word-valued flag takes its word in any case ("--op ALLGATHER"): the value is
// lower-cased before the command reads it (README, "Flags").
extern const CLI::Validator kAnyCase;
// key_range: a flag that takes scenario key `key`'s integer, checked as the scenario checks it:
// "--pad-to-multiple-of: value \"0\" must be an integer from 1 to 65536".
CLI::Validator key_range(std::string_view key);
// finite_in: a flag of a finite number from lo to hi: "--max-flops: value \"nan\" must be a
// finite number of FLOPs from 1e+06 to 1e+18".
CLI::Validator finite_in(std::string_view what, double lo, double hi);
// kPositiveSeconds: a flag of seconds > 0, finite: "--timeout: value \"-1\" must be a number of
// seconds > 0 (600, 0.5)".
extern const CLI::Validator kPositiveSeconds;

// parse_size_flag reads a size flag ("8", "64KiB", "1GiB") > 0; UsageError naming the flag.
double parse_size_flag(const char* flag, const std::string& text);
// parse_nccl_tests_size_flag: the same, also taking nccl-tests' sizes ("128M": K, M and G are
// powers of 1024, as all_reduce_perf -b/-e read them).
double parse_nccl_tests_size_flag(const char* flag, const std::string& text);

// load_model_arg loads the model a flag names: a zoo name that does not exist is a usage error
// (exit 2); a model file that cannot be read or is malformed is a ConfigError (exit 1).
Model load_model_arg(const std::string& name_or_path);

// run_cli parses args (without the program name) and runs the chosen subcommand. It returns the
// exit code: 0 success, 1 runtime error, 2 usage error; errors go to `err` as one "error: ..."
// line, usage errors followed by one hint line.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gradsync::apps
