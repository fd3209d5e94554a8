#include "engine/draft_model.h"

#include <algorithm>
#include <chrono>

namespace brisk {

Status CheckDraftVocab(const Model& target, const Model& draft) {
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

DraftModelRunner::DraftModelRunner(Model& model, int block_size, int64_t num_blocks,
                                   bool prefix_cache)
    : model_(model),
      block_size_(block_size),
      kv_(model.kv_shape(block_size), std::max<int64_t>(num_blocks, 1)),
      pool_(kv_.num_blocks()),
      prefix_cache_(&pool_, block_size),
      use_prefix_cache_(prefix_cache) {}

void DraftModelRunner::Forget(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return;
  pool_.ReleaseTable(it->second.blocks);
  seqs_.erase(it);
}

namespace {

size_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                             a.begin());
}

}  // namespace

int64_t DraftModelRunner::PendingTokens(int64_t seq_id, std::span<const int32_t> tokens,
                                        const BlockHash& salt) const {
  if (tokens.empty()) return 0;
  size_t have = 0;
  if (auto it = seqs_.find(seq_id); it != seqs_.end()) {
    have = CommonPrefix(it->second.cached, tokens);
  } else if (use_prefix_cache_) {
    std::vector<BlockHash> hashes;
    prefix_cache_.HashFullBlocks(salt, tokens, &hashes);
    const size_t max_hits = std::min((tokens.size() - 1) / block_size_, hashes.size());
    have = static_cast<size_t>(
               prefix_cache_.MatchPrefix(std::span<const BlockHash>(hashes).first(max_hits))) *
           block_size_;
  }
  return static_cast<int64_t>(tokens.size() - std::min(have, tokens.size() - 1));
}

void DraftModelRunner::AcquirePrefix(const Request& r, Seq& s) {
  if (!use_prefix_cache_) return;
  prefix_cache_.HashFullBlocks(r.salt, r.tokens, &s.hashes);
  // Never the block of the newest token: its logits are computed here.
  const size_t max_hits = std::min((r.tokens.size() - 1) / block_size_, s.hashes.size());
  const int32_t hits =
      prefix_cache_.AcquirePrefix(std::span<const BlockHash>(s.hashes).first(max_hits), &s.blocks);
  const auto n = static_cast<size_t>(hits) * block_size_;
  s.cached.assign(r.tokens.begin(), r.tokens.begin() + static_cast<std::ptrdiff_t>(n));
  s.num_published = hits;
  cached_tokens_ += static_cast<int64_t>(n);
}

void DraftModelRunner::Publish(const Request& r, Seq& s, size_t computed) {
  if (!use_prefix_cache_) return;
  // Full blocks of verified tokens, all before the newest token (the draft
  // may recompute that one: see draft_model.h).
  const size_t limit = std::min(computed, r.tokens.size() - 1) / block_size_;
  if (limit <= static_cast<size_t>(s.num_published)) return;
  prefix_cache_.HashFullBlocks(r.salt, r.tokens, &s.hashes);
  const size_t end = std::min({limit, s.hashes.size(), s.blocks.size()});
  for (auto b = static_cast<size_t>(s.num_published); b < end; ++b)
    prefix_cache_.Publish(s.blocks[b], s.hashes[b]);
  s.num_published = static_cast<int32_t>(end);
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
    prefix_cache_.Clear();
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

Status DraftModelRunner::Propose(std::span<Request> requests, ThreadPool& pool,
                                 size_t catch_up_budget) {
  // Round 0: every sequence's tokens the draft has not computed yet (at
  // least the newest one, whose logits give the first draft token; for a
  // prompt-only request, up to the one before it).
  batch_.Clear();
  row_owner_.clear();
  computed_to_.clear();
  size_t catch_up_left = catch_up_budget;  // shared by the prompt-only requests
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    r.draft.clear();
    if (r.tokens.empty() || r.k < 0) continue;
    const bool prompt_only = r.k == 0;
    // A draft with a shorter context than the target stops drafting for a
    // sequence that outgrew it (the target goes on alone).
    if (static_cast<int64_t>(r.tokens.size()) + std::max(r.k - 1, 0) >
        model_.config().context_length) {
      Forget(r.seq_id);
      continue;
    }
    auto [it, fresh] = seqs_.try_emplace(r.seq_id);
    Seq& s = it->second;
    if (fresh) AcquirePrefix(r, s);
    const size_t from = std::min(CommonPrefix(s.cached, r.tokens), r.tokens.size() - 1);
    s.cached.resize(from);
    size_t n = r.tokens.size() - from;
    bool catching_up = n > static_cast<size_t>(kMaxCatchUpTokens);
    if (prompt_only) {
      n = std::min(n - 1, catch_up_left);
      if (n == 0) continue;
      catch_up_left -= n;
      catching_up = true;
    } else if (catching_up) {
      n = kMaxCatchUpTokens;
    }
    // Round j (1..k-1) writes position tokens.size() + j - 1.
    const int64_t positions = static_cast<int64_t>(from + n) + (catching_up ? 0 : r.k - 1);
    if (!Reserve(r.seq_id, s, positions)) continue;  // s is gone
    batch_.Add(r.tokens.subspan(from, n), static_cast<int32_t>(from), s.blocks,
               catching_up ? BatchSequence::Logits::kNone : BatchSequence::Logits::kLast);
    s.cached.insert(s.cached.end(), r.tokens.begin() + static_cast<std::ptrdiff_t>(from),
                    r.tokens.begin() + static_cast<std::ptrdiff_t>(from + n));
    if (!s.drafted) catch_up_tokens_ += static_cast<int64_t>(n);
    if (!catching_up) {
      row_owner_.push_back(i);
      s.drafted = true;
    }
    computed_to_.emplace_back(i, from + n);
  }
  if (batch_.seqs.empty()) return Status::Ok();
  RETURN_IF_ERROR(RunForward(pool));
  for (const auto& [i, to] : computed_to_) Publish(requests[i], seqs_.at(requests[i].seq_id), to);
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
