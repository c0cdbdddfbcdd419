// scenario_keys_test.cpp: the scenario key table: one row per key, every value read as its flag
// reads it (units, choices, bounds), scenario files through the same rows, resolution.
#include "core/scenario_keys.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.hpp"

namespace gradsync {
namespace {

using json = nlohmann::ordered_json;

std::string error_of(const ScenarioKey& k, std::string_view text) {
  try {
    (void)parse_key_value(k, text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioKeys, EveryRowIsComplete) {
  std::set<std::string_view> names;
  for (const ScenarioKey& k : scenario_table()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    std::string flag = "--" + std::string(k.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (k.nccl) {
      // NCCL's knobs go by NCCL's names (--nccl NAME=VALUE); two keep gradsync's short flags.
      EXPECT_EQ(k.name.rfind("NCCL_", 0), 0u) << k.name;
      EXPECT_TRUE(k.flag.empty() || k.flag == "--algo" || k.flag == "--proto") << k.name;
    } else {
      EXPECT_EQ(k.flag, flag) << "flags are the key with dashes";
    }
    EXPECT_FALSE(k.help.empty()) << k.name;
    EXPECT_FALSE(k.default_text.empty()) << k.name;
    EXPECT_EQ(find_scenario_key(k.name), &k);
    if (!k.flag.empty()) {
      EXPECT_EQ(find_scenario_key(k.flag), &k);
    }
    if (k.kind == KeyKind::kChoice) {
      EXPECT_FALSE(k.choices.empty()) << k.name;
    }
    if (k.kind == KeyKind::kSpec) {
      EXPECT_NE(k.canonical, nullptr) << k.name;
    }
    if (k.kind == KeyKind::kCount || k.kind == KeyKind::kSizeMiB) {
      EXPECT_GT(k.max, 0) << k.name;
    }
  }
  EXPECT_EQ(find_scenario_key("bucket-cap-mb"), &scenario_key("bucket_cap_mb"));
  EXPECT_EQ(find_scenario_key("bucket_size"), nullptr);
}

TEST(ScenarioKeys, NoneUnsetsTheCalibrationAsItsDefaultSays) {
  const ScenarioKey& cal = scenario_key("calibration");
  EXPECT_EQ(parse_key_value(cal, "none"), json(""));
  EXPECT_EQ(parse_key_value(cal, " none "), json(""));
  EXPECT_EQ(parse_key_value(cal, "./none"), json("./none"));                // a file of that name
  EXPECT_EQ(parse_key_value(scenario_key("model"), "none"), json("none"));  // not a key an engine resolves
}

TEST(ScenarioKeys, WholeNumbersWithinTheirBounds) {
  const ScenarioKey& gpus = scenario_key("gpus");
  EXPECT_EQ(parse_key_value(gpus, "8"), json(8));
  EXPECT_EQ(parse_key_value(gpus, "+8"), json(8));
  for (const char* bad : {"0", "-1", "1e3", "8.0", "", "eight", "1048577", "99999999999999999999"}) {
    EXPECT_EQ(error_of(gpus, bad), "expected an integer from 1 to 1048576") << bad;
  }
  EXPECT_EQ(parse_key_value(scenario_key("warmup"), "0"), json(0));
  EXPECT_EQ(error_of(scenario_key("grad_accum"), "1000000000"), "expected an integer from 1 to 65536");
  EXPECT_EQ(error_of(scenario_key("iterations"), "1000000000"), "expected an integer from 1 to 1000");
}

TEST(ScenarioKeys, SizesInMiBTakeUnits) {
  const ScenarioKey& cap = scenario_key("bucket_cap_mb");
  EXPECT_EQ(parse_key_value(cap, "25"), json(25.0));
  EXPECT_EQ(parse_key_value(cap, "25MiB"), json(25.0));
  EXPECT_EQ(parse_key_value(cap, "512KiB"), json(0.5));
  EXPECT_EQ(parse_key_value(cap, "1GiB"), json(1024.0));
  EXPECT_EQ(parse_key_value(cap, "0.5"), json(0.5));
  EXPECT_DOUBLE_EQ(parse_key_value(cap, "25MB").get<double>(), 25e6 / 1048576.0);
  // DDP(bucket_cap_mb=0) is PyTorch's too: every gradient closes its bucket.
  EXPECT_EQ(parse_key_value(cap, "0"), json(0.0));
  EXPECT_EQ(parse_key_value(cap, "0MiB"), json(0.0));
  for (const char* bad : {"-1", "25 parsecs", "", "1e400", "nan", "inf", "2PiB", "1e-9"}) {
    EXPECT_NE(error_of(cap, bad).find("expected a size in MiB >= 0 (25, 0.5; 0: one bucket per gradient)"),
              std::string::npos)
        << bad;
  }
  // The first bucket's cap takes 0 too (PyTorch >= 2.3 sets it from bucket_cap_mb, 0 included): the
  // first bucket closes with its first gradient.
  EXPECT_EQ(parse_key_value(scenario_key("first_bucket_mb"), "0"), json(0.0));
  for (const char* bad : {"-1", "-0.5MiB"}) {
    EXPECT_NE(error_of(scenario_key("first_bucket_mb"), bad)
                  .find("expected a size in MiB >= 0 (25, 0.5; 0: the first bucket holds one gradient)"),
              std::string::npos)
        << bad;
  }
}

TEST(ScenarioKeys, ChoicesSwitchesNamesAndHooks) {
  EXPECT_EQ(parse_key_value(scenario_key("precision"), "BF16"), json("bf16"));
  EXPECT_EQ(error_of(scenario_key("precision"), "int8"), "expected fp32, tf32, bf16 or fp16");
  EXPECT_EQ(parse_key_value(scenario_key("algo"), "Ring"), json("ring"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_ALGO"), "Ring,TREE,ring"), json("ring,tree"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_ALGO"), "^NVLS"), json("^nvls"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_ALGO"), "auto"), json(""));
  EXPECT_NE(error_of(scenario_key("NCCL_ALGO"), "CollNetDirect").find("does not model CollNet"), std::string::npos);
  EXPECT_NE(error_of(scenario_key("NCCL_ALGO"), "butterfly").find("unknown name \"butterfly\""), std::string::npos);
  EXPECT_NE(error_of(scenario_key("NCCL_ALGO"), "ring,,tree").find("expected a comma list"), std::string::npos);
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_PROTO"), "^LL128"), json("^ll128"));
  // Excluding every name leaves NCCL nothing to run: an error of the value, not of the run.
  EXPECT_EQ(error_of(scenario_key("NCCL_PROTO"), "^simple,LL,ll128"),
            "^simple,ll,ll128 excludes every one of ll, ll128, simple, and NCCL would have nothing to run; expected "
            "a comma list of ll, ll128, simple (NCCL's names, any case), ^ first to exclude them");
  EXPECT_NE(error_of(scenario_key("NCCL_ALGO"), "^ring,tree,nvls,nvlstree").find("excludes every one"),
            std::string::npos);
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_ALGO"), "^ring,tree,nvls"), json("^ring,tree,nvls"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "2"), json("PXB"));  // NCCL's old numbering
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "SYS"), json("SYS"));
  EXPECT_NE(error_of(scenario_key("NCCL_P2P_LEVEL"), "sys"), "");  // NCCL compares in upper case
  // Old integers as ncclGetLevel reads them: strtol base 0, clamped to SYS above 4.
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "5"), json("SYS"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "9"), json("SYS"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "0x3"), json("PHB"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_LEVEL"), "01"), json("PIX"));
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_NET_GDR_LEVEL"), "12"), json("SYS"));
  EXPECT_NE(error_of(scenario_key("NCCL_P2P_LEVEL"), "08").find("NCCL reads \"08\" as 0"), std::string::npos);
  EXPECT_NE(error_of(scenario_key("NCCL_P2P_LEVEL"), "4x").find("stops at \"x\""), std::string::npos);
  EXPECT_NE(error_of(scenario_key("NCCL_P2P_LEVEL"), "3000000000").find("out of NCCL's range"), std::string::npos);
  EXPECT_NE(error_of(scenario_key("NCCL_P2P_LEVEL"), "-1"), "");  // not a digit first: not a level
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_P2P_DISABLE"), "1"), json(true));
  EXPECT_EQ(parse_key_value(scenario_key("nccl_p2p_disable"), "0"), json(false));  // any case
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_MAX_NCHANNELS"), "65"), json(65));  // capped by the simulator
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_MAX_NCHANNELS"), "0"), json(1));    // NCCL: "setting it to 1"
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_MAX_NCHANNELS"), "-2"), json(0));   // NCCL_PARAM's unset
  EXPECT_EQ(parse_key_value(scenario_key("NCCL_MIN_NCHANNELS"), "-5"), json(0));   // below 0: no minimum
  EXPECT_EQ(error_of(scenario_key("NCCL_MAX_NCHANNELS"), "3000000000"),
            "expected an integer (a C int, as NCCL reads it)");
  EXPECT_EQ(error_of(scenario_key("NCCL_MAX_CTAS"), "0"), "expected an integer from 1 to 2147483647");
  EXPECT_NE(error_of(scenario_key("NCCL_NVLS_ENABLE"), "3"), "");
  EXPECT_EQ(parse_key_value(scenario_key("static_graph"), "true"), json(true));
  EXPECT_EQ(parse_key_value(scenario_key("static_graph"), "no"), json(false));
  EXPECT_EQ(error_of(scenario_key("static_graph"), "maybe"), "expected true or false (or yes/no, on/off, 1/0)");
  EXPECT_EQ(parse_key_value(scenario_key("comm_hook"), "powersgd:rank=4,start_iter=10"),
            json("powersgd:rank=4,start_iter=10"));
  EXPECT_EQ(error_of(scenario_key("comm_hook"), "gzip"),
            "unknown hook; expected none, fp16, bf16, quantize or powersgd[:rank=R,start_iter=S]");
  EXPECT_EQ(error_of(scenario_key("model"), ""), "expected a name or a file, not an empty text");
  EXPECT_NE(error_of(scenario_key("model"), "gpt\xff"), "");      // not UTF-8
  EXPECT_NE(error_of(scenario_key("model"), "gpt\xc0\xaf"), "");  // an overlong form
  EXPECT_NE(error_of(scenario_key("model"), "a\nb"), "");         // a control character
  EXPECT_EQ(parse_key_value(scenario_key("model"), "modèle"), json("modèle"));
}

TEST(ScenarioKeys, EveryKeyStoresAndReadsBack) {
  const std::map<std::string, std::string> text = {{"model", "resnet50"},
                                                   {"topology", "dgx-h100"},
                                                   {"gpus", "4"},
                                                   {"nnodes", "2"},
                                                   {"nproc_per_node", "4"},
                                                   {"batch_per_gpu", "32"},
                                                   {"global_batch", "512"},
                                                   {"seq_len", "512"},
                                                   {"precision", "fp16"},
                                                   {"optimizer", "sgd"},
                                                   {"optimizer_impl", "fused"},
                                                   {"set_to_none", "false"},
                                                   {"grad_scaler", "false"},
                                                   {"input", "device"},
                                                   {"bucket_cap_mb", "50"},
                                                   {"first_bucket_mb", "2"},
                                                   {"grad_accum", "4"},
                                                   {"comm_hook", "bf16"},
                                                   {"find_unused_parameters", "true"},
                                                   {"static_graph", "true"},
                                                   {"gradient_as_bucket_view", "true"},
                                                   {"broadcast_buffers", "false"},
                                                   {"zero_grad", "false"},
                                                   {"clip_grad_norm", "true"},
                                                   {"allreduce_after_backward", "true"},
                                                   {"iterations", "7"},
                                                   {"warmup", "2"},
                                                   {"mixed_precision", "master-weights"},
                                                   {"compile", "true"},
                                                   {"attention", "flash"},
                                                   {"channels_last", "true"},
                                                   {"pad_to_multiple_of", "64"},
                                                   {"pytorch_version", "1.13"},
                                                   {"nccl_version", "2.21"},
                                                   {"fidelity", "step"},
                                                   {"calibration", "c.yaml"},
                                                   {"gpu_spread_pct", "2.5"},
                                                   {"NCCL_ALGO", "tree"},
                                                   {"NCCL_PROTO", "ll128"},
                                                   {"NCCL_P2P_DISABLE", "1"},
                                                   {"NCCL_P2P_LEVEL", "PHB"},
                                                   {"NCCL_SHM_DISABLE", "1"},
                                                   {"NCCL_NVLS_ENABLE", "0"},
                                                   {"NCCL_MIN_NCHANNELS", "4"},
                                                   {"NCCL_MAX_NCHANNELS", "8"},
                                                   {"NCCL_MIN_CTAS", "2"},
                                                   {"NCCL_MAX_CTAS", "12"},
                                                   {"NCCL_NET_GDR_LEVEL", "SYS"},
                                                   {"NCCL_IB_DISABLE", "1"},
                                                   {"NCCL_PXN_DISABLE", "1"}};
  Scenario s;
  for (const ScenarioKey& k : scenario_table()) {
    ASSERT_TRUE(text.count(std::string(k.name))) << "no test value for " << k.name;
    const json v = parse_key_value(k, text.at(std::string(k.name)));
    set_key(s, k, v);
    EXPECT_EQ(key_value(s, k), v) << k.name;
    EXPECT_NE(key_value(s, k), key_value(Scenario{}, k)) << k.name << ": the test value is the default";
  }
  EXPECT_EQ(s.bucket_cap_mb, 50.0);
  EXPECT_EQ(s.gpus, 4);
  EXPECT_TRUE(s.gradient_as_bucket_view);
  EXPECT_FALSE(s.broadcast_buffers);
  // Engine defaults read as null while unset.
  for (const char* k : {"gpus", "nnodes", "nproc_per_node", "batch_per_gpu", "seq_len", "precision", "bucket_cap_mb",
                        "first_bucket_mb", "calibration"})
    EXPECT_TRUE(key_value(Scenario{}, scenario_key(k)).is_null()) << k;
  EXPECT_EQ(scenario_json(Scenario{}).size(), scenario_table().size());
}

// result.json types what a Scenario holds as text: a resolved auto|true|false choice is a boolean,
// gpu_spread_pct a number; "auto" and other choices stay text.
TEST(ScenarioKeys, ResultJsonTypesResolvedSwitchesAndPercentages) {
  Scenario s;
  EXPECT_EQ(scenario_json(s).at("set_to_none"), "auto");
  EXPECT_EQ(scenario_json(s).at("gpu_spread_pct"), 1.5);
  s.set_to_none = "true";
  s.grad_scaler = "false";
  s.gpu_spread_pct = "0";
  const nlohmann::ordered_json j = scenario_json(s);
  EXPECT_EQ(j.at("set_to_none"), true);
  EXPECT_EQ(j.at("grad_scaler"), false);
  EXPECT_EQ(j.at("gpu_spread_pct"), 0.0);
  EXPECT_EQ(j.at("input"), "pageable");
}

TEST(ScenarioKeys, ChecksOfAScenarioBuiltInCode) {
  EXPECT_NO_THROW(check_scenario_keys(Scenario{}));
  Scenario s;
  s.warmup = 5;
  EXPECT_THROW(check_scenario_keys(s), ConfigError);
  // Every micro-step is simulated: grad_accum x iterations at most 10,000.
  s = {};
  s.grad_accum = 2000;
  s.iterations = 5;
  EXPECT_NO_THROW(check_scenario_keys(s));
  s.grad_accum = 2001;
  try {
    check_scenario_keys(s);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("grad_accum \"2001\": 10005 micro-steps over 5 iterations; expected at most "
                                          "10000 micro-steps a run",
                                          0),
              0u)
        << e.what();
  }
  s = {};
  s.bucket_cap_mb = 0;
  EXPECT_NO_THROW(check_scenario_keys(s));
  s.bucket_cap_mb = -1;
  try {
    check_scenario_keys(s);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bucket_cap_mb \"-1\": expected a size in MiB >= 0", 0), 0u) << e.what();
  }
  s = {};
  s.gpus = -2;
  EXPECT_THROW(check_scenario_keys(s), ConfigError);
  s = {};
  s.model = "";
  EXPECT_THROW(check_scenario_keys(s), ConfigError);
  s = {};
  s.precision = "fp8";
  EXPECT_THROW(check_scenario_keys(s), ConfigError);
}

// A release before a feature cannot run it: refused naming the release that brought it; from that
// release on it is taken.
TEST(ScenarioKeys, ResolvedScenarioMakesEveryDefaultExplicit) {
  Scenario asked;
  const Scenario r = resolved_scenario(asked, {8, 16, 1024, "bf16"});
  EXPECT_EQ(r.gpus, 8);
  EXPECT_EQ(r.batch_per_gpu, 16);
  EXPECT_EQ(r.seq_len, 1024);
  EXPECT_EQ(r.precision, "bf16");
  EXPECT_EQ(r.bucket_cap_mb, 25.0);        // PyTorch's default
  EXPECT_EQ(r.first_bucket_mb, 1.0);       // _DEFAULT_FIRST_BUCKET_BYTES
  EXPECT_EQ(r.optimizer_impl, "foreach");  // PyTorch 2.x's defaults
  EXPECT_EQ(r.set_to_none, "true");
  EXPECT_EQ(r.nccl_version, "2.28");  // the NCCL PyTorch 2.11's binaries bundle
  Scenario old_torch;
  old_torch.pytorch_version = "1.13";
  const Scenario o = resolved_scenario(old_torch, {8, 16, 1024, "bf16"});
  EXPECT_EQ(o.optimizer_impl, "for-loop");  // before 2.0: a Python loop, zero_grad fills zeros
  EXPECT_EQ(o.set_to_none, "false");
  EXPECT_EQ(o.nccl_version, "2.14");
  EXPECT_EQ(r.grad_scaler, "false");                                               // bf16 autocast runs without one
  EXPECT_EQ(resolved_scenario(asked, {8, 16, 1024, "fp16"}).grad_scaler, "true");  // fp16 autocast needs one
  Scenario no_step = asked;
  no_step.optimizer = "none";
  EXPECT_EQ(resolved_scenario(no_step, {8, 16, 1024, "fp16"}).grad_scaler, "false");
  EXPECT_EQ(r.global_batch, 8 * 16);  // batch_per_gpu x gpus x grad_accum
  EXPECT_EQ(requested_json(asked, r), json({{"gpus", "default"},
                                            {"batch_per_gpu", "default"},
                                            {"global_batch", "default"},
                                            {"seq_len", "default"},
                                            {"precision", "default"},
                                            {"nccl_version", "auto"},
                                            {"optimizer_impl", "auto"},
                                            {"set_to_none", "auto"},
                                            {"bucket_cap_mb", "default"},
                                            {"first_bucket_mb", "default"},
                                            {"grad_scaler", "auto"}}));
  // An explicit cap is the first bucket too (PyTorch >= 2.3); a model without T keeps seq_len unset.
  asked.bucket_cap_mb = 50;
  asked.gpus = 4;
  const Scenario r2 = resolved_scenario(asked, {4, 32, std::nullopt, "fp16"});
  EXPECT_EQ(r2.first_bucket_mb, 50.0);
  EXPECT_TRUE(key_value(r2, scenario_key("seq_len")).is_null());
  EXPECT_EQ(requested_json(asked, r2).count("gpus"), 0u);
  EXPECT_EQ(requested_json(r2, r2), json::object());
}

class ScenarioFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("gradsync-scenario-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
              ".yaml"))
                .string();
  }
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  std::string error_of_file(const std::string& text) {
    try {
      (void)read_scenario_file(write(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(ScenarioFile, ValuesReadAsTheirFlags) {
  const Scenario s = read_scenario_file(write("model: resnet50\nbucket_cap_mb: 512KiB\nprecision: FP16\n"));
  EXPECT_EQ(s.model, "resnet50");
  EXPECT_EQ(s.bucket_cap_mb, 0.5);
  EXPECT_EQ(s.precision, "fp16");
}

// A model, topology or calibration path in a file is the file's own: relative to its folder, as
// compose files read theirs. Names (no '/' or '.') and absolute paths are left as written.
TEST_F(ScenarioFile, RelativePathsAreTheFilesFolders) {
  const std::string folder = std::filesystem::path(path_).parent_path().string();
  ScenarioLines lines;
  const Scenario s = read_scenario_file(
      write("model: models/mine.yaml\ntopology: ../racks/a.dot\ncalibration: /abs/cal.yaml\n"), {}, &lines);
  EXPECT_EQ(s.model, (std::filesystem::path(folder) / "models/mine.yaml").lexically_normal().string());
  EXPECT_EQ(s.topology, (std::filesystem::path(folder) / "../racks/a.dot").lexically_normal().string());
  EXPECT_EQ(s.calibration, "/abs/cal.yaml");
  EXPECT_EQ(lines, (ScenarioLines{{"model", 1}, {"topology", 2}, {"calibration", 3}}));
  const Scenario names = read_scenario_file(write("model: resnet50\ntopology: dgx1-v100\n"));
  EXPECT_EQ(names.model, "resnet50");
  EXPECT_EQ(names.topology, "dgx1-v100");
  // Text that is not a file's keeps its paths as written.
  EXPECT_EQ(parse_scenario("model: models/mine.yaml\n", "inline").model, "models/mine.yaml");
}

// A resolve error names its key first; the file's line goes before it when the file set that key.
TEST(ScenarioLocate, ErrorsOfKeysTheFileSetGetTheirLine) {
  const ScenarioLines lines{{"gpus", 3}, {"warmup", 5}};
  EXPECT_EQ(located_scenario_error("gpus 9: topology x has 8 GPUs", "run.yaml", lines),
            "run.yaml:3: gpus 9: topology x has 8 GPUs");
  EXPECT_EQ(located_scenario_error("warmup \"5\": expected 0..2", "run.yaml", lines),
            "run.yaml:5: warmup \"5\": expected 0..2");
  EXPECT_EQ(located_scenario_error("seq_len \"9\": no", "run.yaml", lines), "seq_len \"9\": no");
  EXPECT_EQ(located_scenario_error("gpus-ish: no", "run.yaml", lines), "gpus-ish: no");
  EXPECT_EQ(located_scenario_error("", "run.yaml", lines), "");
}

TEST_F(ScenarioFile, BadFilesNameTheLineAndTheKey) {
  EXPECT_EQ(error_of_file("gpus: 8\ngpus: 4\n"),
            path_ + ":2: scenario: key \"gpus\" appears twice in one mapping (lines 1 and 2); keep one");
  EXPECT_EQ(error_of_file("NCCL_ALGO: ring\nalgo: tree\n"),
            path_ + ":2: scenario: \"algo\" sets NCCL_ALGO again (already set on line 1)");
  EXPECT_EQ(error_of_file("model: gpt2\ngpus:\n"),
            path_ +
                ":2: scenario: gpus: no value; give one or remove the key for the default (every GPU of the "
                "topology)");
  EXPECT_EQ(error_of_file("gpus: [1, 2]\n"), path_ + ":1: scenario: gpus is a list; expected a single value");
  EXPECT_EQ(error_of_file("? [a, b]\n: 1\n"),
            path_ + ":1: scenario: a key is a list; keys must be single words or numbers");
  // Aliases that expand without bound ("billion laughs") are refused before anything walks them.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    laughs +=
        fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, static_cast<char>(c - 1),
                    static_cast<char>(c - 1), static_cast<char>(c - 1), static_cast<char>(c - 1),
                    static_cast<char>(c - 1), static_cast<char>(c - 1), static_cast<char>(c - 1),
                    static_cast<char>(c - 1), static_cast<char>(c - 1), static_cast<char>(c - 1));
  }
  EXPECT_NE(error_of_file(laughs).find("more than 5000000 values once its aliases (*name) are expanded"),
            std::string::npos);
  // An alias inside the value it names is a cycle in yaml-cpp's tree (found by the fuzzer: a stack
  // overflow); nesting is bounded before any reader recurses into it.
  const std::string cycle_error =
      ": scenario: an alias (*name) stands inside the value it names, which would nest it in itself for ever; "
      "give the value in full instead";
  EXPECT_EQ(error_of_file("a: &x [*x]\n"), path_ + ":1" + cycle_error);
  EXPECT_EQ(error_of_file("a:\n  &x {b: [1, *x]}\n"), path_ + ":2" + cycle_error);
  // The file's top mapping is the first level.
  EXPECT_EQ(error_of_file("a: " + std::string(100, '[') + std::string(100, ']') + "\n"),
            path_ + ":1: scenario: mappings and lists nest more than 100 levels deep; gradsync's files nest a few");
  // Past yaml-cpp's own guard (its parser says only "bad file") the message is the same.
  EXPECT_EQ(error_of_file("a: " + std::string(3000, '[') + std::string(3000, ']') + "\n"),
            path_ + ":1: scenario: mappings and lists nest more than 100 levels deep; gradsync's files nest a few");
  EXPECT_NE(error_of_file("a: " + std::string(99, '[') + std::string(99, ']') + "\n").find("unknown key \"a\""),
            std::string::npos);
  EXPECT_EQ(error_of_file("bucket_cap_mb: -5\n"),
            path_ +
                ":1: scenario: bucket_cap_mb \"-5\": expected a size in MiB >= 0 (25, 0.5; 0: one bucket per "
                "gradient) or with a unit (25MiB, 512KiB, 1GiB), at most 1073741824 MiB");
  // Dashes or underscores alike (README, "Scenario"), but not a flag's spelling; one key under both
  // spellings is set twice.
  EXPECT_EQ(error_of_file("bucket-cap-mb: 5\n"), "");
  EXPECT_EQ(read_scenario_file(write("batch-per-gpu: 8\nbucket-cap-mb: 5\n")).batch_per_gpu, 8);
  EXPECT_EQ(read_scenario_file(write("bucket-cap-mb: 5\n")).bucket_cap_mb, 5.0);
  EXPECT_NE(
      error_of_file("--bucket-cap-mb: 5\n").find("unknown key \"--bucket-cap-mb\" (did you mean \"bucket_cap_mb\"?)"),
      std::string::npos);
  // A typo two edits or fewer from a key (or one of its aliases) is named with the key; farther, not.
  EXPECT_EQ(error_of_file("buket_cap_mb: 5\n")
                .rfind(path_ + ":1: scenario: unknown key \"buket_cap_mb\" (did you mean "
                               "\"bucket_cap_mb\"?); expected one of model, ",
                       0),
            0u);
  EXPECT_NE(error_of_file("NCCL_ALG: ring\n").find("(did you mean \"NCCL_ALGO\"?)"), std::string::npos);
  EXPECT_EQ(error_of_file("colour: 5\n").find("did you mean"), std::string::npos);
  // A syntax error is said at its line and column.
  EXPECT_EQ(error_of_file("model: [resnet50\ngpus: 2\n").rfind(path_ + ":2:5: syntax error: ", 0), 0u);
  EXPECT_EQ(error_of_file("bucket_cap_mb: 5\nbucket-cap-mb: 6\n"),
            path_ + ":2: scenario: \"bucket-cap-mb\" sets bucket_cap_mb again (already set on line 1)");
  // A quote left open runs on to the end of the file, its line break folded into a space: "2 "
  // read as gpus 2 before, "resnet18 " as a model that is neither in the zoo nor a file.
  const std::string open_quote =
      ": begins or ends with a blank (is a quote left open?); expected the value alone, quoted on one line or not "
      "at all";
  EXPECT_EQ(error_of_file("gpus: \"2\n"), path_ + ":1: scenario: gpus \"2 \"" + open_quote);
  EXPECT_EQ(error_of_file("model: 'resnet18\n"), path_ + ":1: scenario: model \"resnet18 \"" + open_quote);
  EXPECT_EQ(error_of_file("model: \" resnet18\"\n"), path_ + ":1: scenario: model \" resnet18\"" + open_quote);
  EXPECT_EQ(error_of_file("model: \"resnet18\"\n"), "");
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// The input key's three values reach the steps as their enum; anything else (a Scenario built by
// code, past the table's check) is an error naming the key, not a silent default.
}  // namespace
}  // namespace gradsync
