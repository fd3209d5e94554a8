// The outputs of a benchmark: the JSON result file (config, workload,
// aggregate metrics, one record per request) and the summary table printed
// at the end (laid out like vLLM's benchmark_serving.py).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loadgen/runner.h"
#include "util/status.h"

namespace brisk::loadgen {

// "brisk-bench-result/1": see docs in bench/plot_bench.py for the fields
// the plots read. Latencies in milliseconds, times in seconds.
nlohmann::json ResultToJson(const BenchResult& result);
std::string FormatSummary(const BenchResult& result);
Status WriteJsonFile(const std::string& path, const nlohmann::json& j);

}  // namespace brisk::loadgen
