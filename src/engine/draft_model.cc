#include "engine/draft_model.h"

#include <algorithm>
#include <chrono>

namespace brisk {

Status CheckDraftVocab(const LlamaModel& target, const LlamaModel& draft) {
  if (target.config().vocab != draft.config().vocab)
    return InvalidArgument(
        "the draft model's vocabulary has {} tokens, the target's {}: a draft model needs the "
        "target's tokenizer",
        draft.config().vocab, target.config().vocab);
  auto a = target.file().GetStringArray("tokenizer.ggml.tokens");
  auto b = draft.file().GetStringArray("tokenizer.ggml.tokens");
  if (!a.ok() || !b.ok()) return InvalidArgument("a model file has no tokenizer.ggml.tokens");
  const auto& ta = **a;
  const auto& tb = **b;
  if (ta.size() != tb.size())
    return InvalidArgument("the draft model's tokenizer has {} tokens, the target's {}", tb.size(),
                           ta.size());
  const auto diff = std::mismatch(ta.begin(), ta.end(), tb.begin());
  if (diff.first != ta.end())
    return InvalidArgument(
        "the draft model's tokenizer differs from the target's at token {} ('{}' vs '{}'): a "
        "draft model needs the target's tokenizer",
        diff.first - ta.begin(), *diff.second, *diff.first);
  return Status::Ok();
}

DraftModelRunner::DraftModelRunner(LlamaModel& model, int block_size, int64_t num_blocks)
    : model_(model),
      block_size_(block_size),
      kv_(model.kv_shape(block_size), std::max<int64_t>(num_blocks, 1)),
      pool_(kv_.num_blocks()) {}

void DraftModelRunner::Forget(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return;
  pool_.ReleaseTable(it->second.blocks);
  seqs_.erase(it);
}

bool DraftModelRunner::Reserve(int64_t seq_id, Seq& s, int64_t n) {
  const int64_t need = (n + block_size_ - 1) / block_size_ - static_cast<int64_t>(s.blocks.size());
  if (need <= 0 || pool_.Allocate(need, &s.blocks)) return true;
  Forget(seq_id);
  return false;
}

Status DraftModelRunner::RunForward(ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  Status st = model_.Forward(batch_, kv_, pool, &logits_);
  if (!st.ok()) {
    // The cached-token records may no longer match the KV: start over.
    for (auto& [id, s] : seqs_) pool_.ReleaseTable(s.blocks);
    seqs_.clear();
    return st;
  }
  cost_.Observe(batch_.tokens.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

int32_t DraftModelRunner::Argmax(size_t row) const {
  const auto vocab = static_cast<size_t>(model_.config().vocab);
  const float* p = logits_.data() + row * vocab;
  return static_cast<int32_t>(std::max_element(p, p + vocab) - p);
}

Status DraftModelRunner::Propose(std::span<Request> requests, ThreadPool& pool) {
  // Round 0: every sequence's tokens the draft has not computed yet (at
  // least the newest one, whose logits give the first draft token).
  batch_.Clear();
  row_owner_.clear();
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    r.draft.clear();
    if (r.tokens.empty() || r.k <= 0) continue;
    // A draft with a shorter context than the target stops drafting for a
    // sequence that outgrew it (the target goes on alone).
    if (static_cast<int64_t>(r.tokens.size()) + r.k - 1 > model_.config().context_length) {
      Forget(r.seq_id);
      continue;
    }
    Seq& s = seqs_[r.seq_id];
    const auto n_common = static_cast<size_t>(
        std::mismatch(s.cached.begin(), s.cached.end(), r.tokens.begin(), r.tokens.end()).first -
        s.cached.begin());
    const size_t from = std::min(n_common, r.tokens.size() - 1);
    s.cached.resize(from);
    size_t n = r.tokens.size() - from;
    const bool catching_up = n > static_cast<size_t>(kMaxCatchUpTokens);
    if (catching_up) n = kMaxCatchUpTokens;
    // Round j (1..k-1) writes position tokens.size() + j - 1.
    const int64_t positions = static_cast<int64_t>(from + n) + (catching_up ? 0 : r.k - 1);
    if (!Reserve(r.seq_id, s, positions)) continue;  // s is gone
    batch_.Add(r.tokens.subspan(from, n), static_cast<int32_t>(from), s.blocks,
               catching_up ? BatchSequence::Logits::kNone : BatchSequence::Logits::kLast);
    s.cached.insert(s.cached.end(), r.tokens.begin() + static_cast<std::ptrdiff_t>(from),
                    r.tokens.begin() + static_cast<std::ptrdiff_t>(from + n));
    if (!catching_up) row_owner_.push_back(i);
  }
  if (batch_.seqs.empty()) return Status::Ok();
  RETURN_IF_ERROR(RunForward(pool));
  for (size_t row = 0; row < row_owner_.size(); ++row)
    requests[row_owner_[row]].draft.push_back(Argmax(row));

  // Rounds 1..: feed each sequence its newest draft token while it wants more.
  for (int round = 1;; ++round) {
    batch_.Clear();
    row_owner_.clear();
    for (size_t i = 0; i < requests.size(); ++i) {
      Request& r = requests[i];
      if (static_cast<int>(r.draft.size()) != round || round >= r.k) continue;
      Seq& s = seqs_.at(r.seq_id);
      const int32_t tok = r.draft.back();
      batch_.Add(std::span<const int32_t>(&tok, 1), static_cast<int32_t>(s.cached.size()),
                 s.blocks);
      s.cached.push_back(tok);
      row_owner_.push_back(i);
    }
    if (batch_.seqs.empty()) break;
    RETURN_IF_ERROR(RunForward(pool));
    for (size_t row = 0; row < row_owner_.size(); ++row)
      requests[row_owner_[row]].draft.push_back(Argmax(row));
  }
  return Status::Ok();
}

}  // namespace brisk
