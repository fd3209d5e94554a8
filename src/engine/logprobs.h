// Log probabilities of sampled tokens (OpenAI's logprobs / top_logprobs,
// the completions API's logprobs and echo): plain numbers the engine
// computes per sampled row and sends across the engine-client seam; token
// texts are made on the server side.
//
// Which distribution: the raw model output, log-softmax of the logits as the
// forward pass returned them, before the grammar mask, logit_bias, min_tokens
// suppression, penalties and temperature. That is vLLM's default
// (logprobs_mode = raw_logprobs), so the numbers do not depend on the
// sampling settings and a token the mask or a penalty ruled out still has
// its model probability.
//
// Cost: nothing for a request that does not ask. One that does pays a
// max pass, an exp-sum pass and (top k > 0) one heap scan over its row,
// O(V + V log k) with k <= 20.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace brisk {

// Top alternatives asked for per token: chat top_logprobs is 0..20,
// completions logprobs 0..5.
inline constexpr int kMaxLogprobsTop = 20;

// One position of a generated (or echoed prompt) text.
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;  // log p(token); -inf if the model gives it no mass
  // The k most likely tokens at this position, most likely first (ties:
  // lower id first): (token id, log p).
  std::vector<std::pair<int32_t, float>> top;
};

// Log-softmax facts of one logits row, computed once and reused for the
// sampled token and the alternatives.
class RowLogprobs {
 public:
  // `logits` stays borrowed until the next Reset(); all -inf or NaN-free
  // rows are fine (an all -inf row gives -inf everywhere).
  void Reset(std::span<const float> logits);
  // log p(token) under the row; -inf for ids outside the row.
  float Of(int32_t token) const;
  // The k most likely tokens (k clamped to the row size), most likely first.
  void Top(int k, std::vector<std::pair<int32_t, float>>* out);

 private:
  std::span<const float> logits_;
  double log_z_ = 0;  // max + log(sum(exp(l - max)))
  std::vector<std::pair<float, int32_t>> heap_;
};

// The record for `token` sampled from `logits` with `top_k` alternatives.
TokenLogprob MakeTokenLogprob(std::span<const float> logits, int32_t token, int top_k,
                              RowLogprobs* scratch);

}  // namespace brisk
