// The judge of a rollout's shadow pairs: a live request answered
// by the baseline and by the candidate, scored for the candidate.
//
// Three checks, cheapest first:
//  - structured-output validity of each answer, when the request constrained
//    it: response_format json_object / json_schema and guided_json /
//    structured_outputs.json (AnswerCheck, valijson), guided_choice /
//    structured_outputs.choice (one of the strings), guided_regex /
//    structured_outputs.regex (PCRE2 whole match), tools (the answer's tool
//    calls name declared functions with object arguments valid against their
//    parameters). A GBNF grammar is not checked (-1).
//  - exact agreement, when the request is greedy: temperature 0 or top_k 1
//    (an absent temperature is 1 in brisk serve and OpenAI, so sampled);
//    JSON answers (structured requests) compare as parsed JSON, text after
//    trimming surrounding whitespace.
//  - an LLM judge (the largest tier): a fixed rubric prompt with the request
//    and the two answers, greedy with a fixed seed, its answer constrained to
//    {"winner": "A" | "B" | "tie"}. It is asked twice, in parallel, baseline
//    as A and then candidate as A, to cancel position bias: the same winner
//    in both orders is the verdict; both orders picking the same position
//    (A twice or B twice) is position_inconsistent and a tie; a tie in one
//    order and a winner in the other is a tie.
// The LLM is not asked when the structure already decides (exactly one
// answer valid) or when the answers agree exactly (a tie by definition).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"
#include "util/wilson.h"

namespace brisk::http {
class UpstreamClient;
}

namespace brisk::gateway {

struct JudgePair {
  nlohmann::json request;  // the client's body, chat or completions
  std::string baseline;    // answer texts (JudgeAnswerText of each response)
  std::string candidate;
};

struct JudgeVerdict {
  // Structured output: 1 valid, 0 invalid, -1 the request did not constrain it.
  int baseline_valid = -1;
  int candidate_valid = -1;
  // 1/0 when the request is greedy (exact comparison allowed), -1 otherwise.
  int exact_agree = -1;
  // +1 candidate better, -1 baseline better, 0 tie or the two orders disagree.
  int llm = 0;
  bool llm_ran = false;
  bool position_inconsistent = false;  // the two orders picked the same position
  // What the judge answered with the baseline as A / the candidate as A
  // ("A", "B", "tie"; "" when not asked or it failed).
  std::string winner_baseline_first;
  std::string winner_candidate_first;
  std::string llm_error;  // why the LLM judge gave no verdict ("" otherwise)

  // Whether the pair was scored: by structure, exact agreement or the LLM.
  // An undecided pair (the judge failed) should not count in a win rate.
  bool Decided() const;
  // The candidate's score for a win rate: 1 win, 0.5 tie, 0 loss. A
  // structurally invalid candidate against a valid baseline is a loss (and a
  // valid one against an invalid baseline a win) without the LLM; exact
  // agreement is a tie. 0.5 when undecided.
  double Score() const;
  nlohmann::json ToJson() const;
};

struct JudgeOptions {
  int64_t seed = 1234;
  int max_tokens = 16;  // {"winner":"tie"} is ~6 tokens
  // Each of the request and the two answers is cut to this many bytes in the
  // prompt (a small judge's context is short; the cut is marked).
  size_t max_text_bytes = 4000;
  std::string api_key;  // sent as a bearer token when set
  // Ask a `brisk serve` judge at batch priority, so a judge tier that also
  // serves callers schedules their requests first.
  bool batch_priority = false;
};

// --- Pure parts (no model). ---

// The text of choice 0 of a chat or completions response: its tool calls as
// a JSON array when it made any, else its content / text.
std::string JudgeAnswerText(const nlohmann::json& response);
// 1 valid, 0 invalid, -1 the request did not constrain the answer.
int StructuredValidity(const nlohmann::json& request, std::string_view answer);
// 1/0 when the request is greedy, -1 otherwise.
int ExactAgreement(const nlohmann::json& request, std::string_view baseline,
                   std::string_view candidate);
// Validity and exact agreement; the LLM fields untouched.
JudgeVerdict CheckPair(const JudgePair& pair);
// Whether the LLM is needed after CheckPair.
bool NeedsLlm(const JudgeVerdict& v);

// The user message of the rubric: the request, answer A, answer B.
std::string JudgePrompt(const nlohmann::json& request, std::string_view answer_a,
                        std::string_view answer_b, size_t max_text_bytes);
// The /v1/chat/completions body asking `model` for the verdict.
nlohmann::json JudgeRequestBody(const std::string& model, const nlohmann::json& request,
                                std::string_view answer_a, std::string_view answer_b,
                                const JudgeOptions& opts);

enum class JudgeWinner { kA, kB, kTie };
std::string_view WinnerName(JudgeWinner w);
// From the judge's response body: {"winner": ...} in choice 0's content
// (else a bare A / B / tie); InvalidArgument when neither.
Expected<JudgeWinner> ParseJudgeResponse(std::string_view response_body);
// Sets llm, llm_ran, position_inconsistent and the winner names.
void CombineOrders(JudgeWinner baseline_first, JudgeWinner candidate_first, JudgeVerdict* v);

// --- The judge. ---

class Judge {
 public:
  // `client` is the judge tier's upstream and must outlive the Judge's calls.
  Judge(http::UpstreamClient* client, std::string model, JudgeOptions opts);
  // Scores a pair; `done` runs once on the client's executor (at once, on
  // the caller's thread, when the LLM is not needed). Never throws: a failed
  // judge call leaves llm_ran false with llm_error set.
  void Score(JudgePair pair, std::function<void(JudgeVerdict)> done);

 private:
  http::UpstreamClient* client_;
  std::string model_;
  JudgeOptions opts_;
};

// --- Win rate. ---

struct WinRate {
  int64_t n = 0;
  double mean = 0;
  double lower = 0;
  double upper = 1;
};
// The mean of n scores in [0, 1] (score_sum their sum) and its Wilson score
// interval (util/wilson.h) at normal quantile z; n = 0 gives [0, 1]. Inline
// so that rollout.cc (and the parsers' fuzz target, which compiles it
// without the judge) needs nothing of judge.cc.
inline WinRate WilsonInterval(double score_sum, int64_t n, double z = kWilsonZ95TwoSided) {
  WinRate w;
  w.n = n;
  if (n <= 0) return w;
  w.mean = std::clamp(score_sum / static_cast<double>(n), 0.0, 1.0);
  const WilsonBounds b = WilsonScoreInterval(score_sum, n, z);
  w.lower = b.lower;
  w.upper = b.upper;
  return w;
}

}  // namespace brisk::gateway
