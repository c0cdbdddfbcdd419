// scenario_grid_test.cpp: --vary values through the key table, ranges, and the grid's order.
#include "core/scenario_grid.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace gradsync {
namespace {

using json = nlohmann::ordered_json;

std::vector<std::string> labels(std::string_view text) { return parse_vary(text).labels; }

std::string error_of(std::string_view text) {
  try {
    (void)parse_vary(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Vary, ListsAndRanges) {
  EXPECT_EQ(labels("gpus=1,2,8"), (std::vector<std::string>{"1", "2", "8"}));
  EXPECT_EQ(labels("gpus=1..4"), (std::vector<std::string>{"1", "2", "3", "4"}));
  EXPECT_EQ(labels("gpus=1:64:x2"), (std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(labels("gpus=1:100:x4"), (std::vector<std::string>{"1", "4", "16", "64"}));
  EXPECT_EQ(labels("gpus=2:10:+4"), (std::vector<std::string>{"2", "6", "10"}));
  EXPECT_EQ(labels("gpus=2:10:4,16"), (std::vector<std::string>{"2", "6", "10", "16"}));
  EXPECT_EQ(labels("bucket_cap_mb=1:100:x5"), (std::vector<std::string>{"1", "5", "25"}));
  EXPECT_EQ(labels("bucket_cap_mb=1MiB:4MiB:+1MiB"), (std::vector<std::string>{"1", "2", "3", "4"}));
  EXPECT_EQ(labels("bucket_cap_mb=512KiB,25MiB"), (std::vector<std::string>{"0.5", "25"}));
  EXPECT_EQ(labels("bucket-cap-mb=5"), (std::vector<std::string>{"5"}));  // the flag's spelling
  EXPECT_EQ(labels("comm_hook=none,powersgd:rank=4,start_iter=10,bf16"),
            (std::vector<std::string>{"none", "powersgd:rank=4,start_iter=10", "bf16"}));
  EXPECT_EQ(labels("static_graph=true,false"), (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(labels("algo=ring,tree"), (std::vector<std::string>{"ring", "tree"}));
  // A value that is itself NCCL's comma list joins its names with + (the comma separates values).
  EXPECT_EQ(labels("NCCL_ALGO=ring+tree,nvls"), (std::vector<std::string>{"ring,tree", "nvls"}));
  EXPECT_EQ(labels("NCCL_PROTO=^ll+ll128,simple"), (std::vector<std::string>{"^ll,ll128", "simple"}));
  EXPECT_EQ(labels("strategy=ddp"), (std::vector<std::string>{"ddp"}));
  EXPECT_EQ(parse_vary("gpus=1,2").values, (std::vector<json>{1, 2}));
  EXPECT_EQ(parse_vary("bucket_cap_mb=25").values, (std::vector<json>{25.0}));
  // A decimal key takes ranges too; its values are its canonical text (0.1 + 0.2 is 0.3).
  EXPECT_EQ(labels("gpu_spread_pct=0:0.4:0.1"), (std::vector<std::string>{"0", "0.1", "0.2", "0.3", "0.4"}));
  EXPECT_EQ(labels("gpu_spread_pct=0..2,4.5"), (std::vector<std::string>{"0", "1", "2", "4.5"}));
  EXPECT_EQ(labels("gpu_spread_pct=1:8:x2"), (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(parse_vary("gpu_spread_pct=1:2:1").values, (std::vector<json>{"1", "2"}));
  EXPECT_EQ(error_of("gpu_spread_pct=0:30:10"),
            "--vary \"gpu_spread_pct=0:30:10\": range \"0:30:10\": its end \"30\": expected a percentage from 0 "
            "to 20 (1.5: one GPU's compute rate varies by 1.5% about the median)");
}

TEST(Vary, BadValuesNameTheTextAndWhatWasExpected) {
  EXPECT_EQ(error_of("gpus=1,two"), "--vary \"gpus=1,two\": \"two\": expected an integer from 1 to 1048576");
  EXPECT_EQ(error_of("bucket_cap_mb=25,25MiB"), "--vary \"bucket_cap_mb=25,25MiB\": \"25MiB\" given twice (as 25)");
  // NCCL reads its lists as sets: the same algorithms in another order are one value.
  EXPECT_EQ(error_of("NCCL_ALGO=ring+tree,tree+ring"),
            "--vary \"NCCL_ALGO=ring+tree,tree+ring\": \"tree,ring\" given twice (as ring,tree)");
  EXPECT_EQ(error_of("gpus=8..1"), "--vary \"gpus=8..1\": range \"8..1\" is empty: 8 is above 1");
  EXPECT_EQ(error_of("gpus=1:8:x1"),
            "--vary \"gpus=1:8:x1\": range \"1:8:x1\": step \"1\": expected xF with a whole factor F >= 2");
  EXPECT_EQ(error_of("warmup=0:4:x2"), "--vary \"warmup=0:4:x2\": range \"0:4:x2\": a range xF must start above 0");
  EXPECT_EQ(error_of("bucket_cap_mb=1..4"),
            "--vary \"bucket_cap_mb=1..4\": range \"1..4\": a size takes A:B:xF or A:B:S, not A..B");
  // A bad end of a range is named as that end.
  EXPECT_EQ(error_of("gpus=0..4"),
            "--vary \"gpus=0..4\": range \"0..4\": its start \"0\": expected an integer from 1 to 1048576");
  EXPECT_EQ(error_of("gpus=1..0"),
            "--vary \"gpus=1..0\": range \"1..0\": its end \"0\": expected an integer from 1 to 1048576");
  EXPECT_NE(error_of("gpus=1..100000").find("more than 10000 values"), std::string::npos);
  // A step too fine to write is a range of too many values, counted before any value is made, not a
  // value the key refuses.
  EXPECT_EQ(error_of("gpu_spread_pct=0:2:1e-20"),
            "--vary \"gpu_spread_pct=0:2:1e-20\": range \"0:2:1e-20\" has more than 10000 values");
  EXPECT_EQ(error_of("bucket_cap_mb=1:25:x1.0000000001"),
            "--vary \"bucket_cap_mb=1:25:x1.0000000001\": range \"1:25:x1.0000000001\" has more than 10000 values");
  EXPECT_EQ(error_of("gpus=1,,2"), "--vary \"gpus=1,,2\": an empty value");
  // Blanks at a value's ends are refused, as every flag's value's are, whatever the key reads.
  EXPECT_EQ(
      error_of("gpus= 4"),
      "--vary \"gpus= 4\": value \" 4\" has blanks at its ends; expected it without them (no blank after = or ,)");
  EXPECT_EQ(error_of("model=resnet18 , resnet50"),
            "--vary \"model=resnet18 , resnet50\": value \"resnet18 \" has blanks at its ends; expected it without "
            "them (no blank after = or ,)");
  EXPECT_EQ(error_of("strategy=dp,fsdp"), "--vary \"strategy=dp,fsdp\": \"fsdp\": expected dp or ddp");
  EXPECT_EQ(error_of("precision=fp8"), "--vary \"precision=fp8\": \"fp8\": expected fp32, tf32, bf16 or fp16");
  EXPECT_NE(error_of("bucket_size=1").find("unknown key \"bucket_size\"; expected one of strategy, model,"),
            std::string::npos);
  // NCCL's knobs by NCCL's names only, as in scenario files and --nccl.
  EXPECT_EQ(error_of("nccl_algo=ring"),
            "--vary \"nccl_algo=ring\": \"nccl_algo\" is not NCCL's name; NCCL reads NCCL_ALGO (upper case, as the "
            "environment variable)");
  EXPECT_EQ(error_of("NCCL_ALGO=ring,tree"), "");
  EXPECT_NE(error_of("gpus").find("expected KEY=V1,V2,..."), std::string::npos);
  EXPECT_NE(error_of("=1").find("expected KEY=V1,V2,..."), std::string::npos);
  // KEY= names what is missing; a near miss of a key is named with it.
  EXPECT_EQ(error_of("gpus="),
            "--vary \"gpus=\": no values after \"=\"; expected gpus=V1,V2,... or a range (1..8, 1:64:x2)");
  EXPECT_NE(error_of("bucket_cap_mbs=1").find("unknown key \"bucket_cap_mbs\" (did you mean \"bucket_cap_mb\"?); "),
            std::string::npos);
  EXPECT_NE(error_of("strategie=dp").find("(did you mean \"strategy\"?)"), std::string::npos);
}

TEST(Grid, LastKeyChangesFastestAndStrategyIsAdded) {
  Scenario base;
  base.model = "resnet50";
  const auto pts = expand_grid(base, {parse_vary("gpus=2,4"), parse_vary("bucket_cap_mb=5,25")});
  ASSERT_EQ(pts.size(), 8u);
  EXPECT_EQ(pts[0].label, "gpus=2 bucket_cap_mb=5 dp");
  EXPECT_EQ(pts[1].label, "gpus=2 bucket_cap_mb=5 ddp");
  EXPECT_EQ(pts[2].label, "gpus=2 bucket_cap_mb=25 dp");
  EXPECT_EQ(pts[7].label, "gpus=4 bucket_cap_mb=25 ddp");
  EXPECT_EQ(pts[7].scenario.gpus, 4);
  EXPECT_EQ(pts[7].scenario.bucket_cap_mb, 25.0);
  EXPECT_EQ(pts[7].scenario.model, "resnet50");
  EXPECT_EQ(pts[7].strategy, Strategy::kDDP);
  EXPECT_EQ(pts[6].strategy, Strategy::kDP);
  for (std::size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].index, static_cast<int>(i));
  const auto one = expand_grid(base, {parse_vary("strategy=ddp"), parse_vary("gpus=1,2")});
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].label, "ddp gpus=2");
  try {
    (void)expand_grid(base, {parse_vary("gpus=1"), parse_vary("gpus=2")});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--vary gpus given twice; list every value in one --vary");
  }
  EXPECT_THROW((void)expand_grid(base, {parse_vary("gpus=1..1000"), parse_vary("batch_per_gpu=1..1000")}), UsageError);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// --vary strategy takes any case, as --strategy does; the points keep PyTorch's lower-case names.
// NCCL_MAX_CTAS is a knob of its own, not NCCL_MAX_NCHANNELS under another name (it also
// bounds NVLS, which NCCL_MAX_NCHANNELS does not).
TEST(ScenarioGrid, VaryTakesStrategiesInAnyCaseAndNcclMaxCtasAsItsOwnKnob) {
  const Vary s = parse_vary("strategy=DDP,Dp");
  ASSERT_EQ(s.labels.size(), 2u);
  EXPECT_EQ(s.labels[0], "ddp");
  EXPECT_EQ(s.labels[1], "dp");
  EXPECT_THROW(parse_vary("strategy=fsdp"), UsageError);
  const Vary c = parse_vary("NCCL_MAX_CTAS=2,4");
  EXPECT_EQ(c.key, "NCCL_MAX_CTAS");
  EXPECT_EQ(c.labels.size(), 2u);
}

}  // namespace
}  // namespace gradsync
