#include "eval/kld_gate.h"

#include <fstream>
#include <sstream>

#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/thread_pool.h"

namespace brisk::eval {

Expected<TextChunks> ChunkTextFile(const GgufFile& file, const std::string& text_path, int n_ctx,
                                   int max_chunks) {
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return NotFound("cannot read the evaluation text '{}'", text_path);
  std::stringstream ss;
  ss << in.rdbuf();
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::FromGguf(file));
  const bool add_bos = tok->add_bos() && tok->bos_id().has_value();
  return MakeChunks(tok->Encode(ss.str(), /*add_special=*/true, /*parse_special=*/false), n_ctx,
                    max_chunks, add_bos ? tok->bos_id() : std::nullopt);
}

Expected<KldSummary> CompareWithNative(std::shared_ptr<const GgufFile> file,
                                       const KldCheckConfig& c,
                                       const std::function<void(int, int)>& on_chunk) {
  ASSIGN_OR_RETURN(KvType kv, ParseKvPrecision(c.kv_precision));
  ASSIGN_OR_RETURN(LoadPrecision precision, LoadPrecisionType(c.precision));
  ASSIGN_OR_RETURN(std::unique_ptr<Model> ref, Model::FromGguf(file, LoadOptions{}));
  LoadOptions test_options;
  test_options.precision = precision;
  if (c.rope != "file") {
    ASSIGN_OR_RETURN(RopeScaling rope, ParseRopeScalingKey(c.rope));
    test_options.rope_scaling = rope;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Model> test, Model::FromGguf(file, test_options));
  ASSIGN_OR_RETURN(TextChunks all, ChunkTextFile(*file, c.text, c.n_ctx, c.max_chunks));
  const int vocab = ref->config().vocab;
  ThreadPool pool(c.threads);
  // One chunk of reference rows, packed: (min, step) and vocab u16 per row.
  const int rows = all.scored_per_chunk();
  std::vector<uint16_t> q(static_cast<size_t>(rows) * vocab);
  std::vector<std::pair<float, float>> range(static_cast<size_t>(rows));
  std::vector<float> lp(static_cast<size_t>(vocab)), ref_lp(lp.size());
  std::vector<PositionStats> stats;
  stats.reserve(static_cast<size_t>(all.scored()));
  TextChunks one = all;
  one.n_chunks = 1;
  for (int chunk = 0; chunk < all.n_chunks; ++chunk) {
    const auto begin = all.tokens.begin() + static_cast<ptrdiff_t>(chunk) * all.n_ctx;
    one.tokens.assign(begin, begin + all.n_ctx);
    auto row_of = [&](int j) { return static_cast<size_t>(j - one.first()); };
    RETURN_IF_ERROR(ScoreChunks(*ref, pool, one, [&](int, int j, const float* logits) {
      LogSoftmax(logits, vocab, lp.data());
      auto& [min, step] = range[row_of(j)];
      PackLogProbs(lp.data(), vocab, &min, &step, q.data() + row_of(j) * vocab);
      return Status::Ok();
    }));
    RETURN_IF_ERROR(ScoreChunks(
        *test, pool, one,
        [&](int, int j, const float* logits) {
          const auto& [min, step] = range[row_of(j)];
          UnpackLogProbs(min, step, q.data() + row_of(j) * vocab, vocab, ref_lp.data());
          LogSoftmax(logits, vocab, lp.data());
          stats.push_back(ComparePosition(ref_lp.data(), lp.data(), vocab, one.next_token(0, j)));
          return Status::Ok();
        },
        {}, kv));
    if (on_chunk) on_chunk(chunk + 1, all.n_chunks);
  }
  return Summarize(stats);
}

nlohmann::json KldCheckJson(const KldSummary& s, const KldCheckConfig& c,
                            const std::string& model_path) {
  nlohmann::json j = SummaryJson(s);
  j["reference"] = {{"model", model_path}, {"precision", "native"}, {"kv_precision", "f16"}};
  j["tested"] = {
      {"model", model_path}, {"precision", c.precision}, {"kv_precision", c.kv_precision}};
  if (c.rope != "file") j["tested"]["rope"] = c.rope;
  j["text"] = c.text;
  j["n_ctx"] = c.n_ctx;
  const int64_t per_chunk = c.n_ctx - 1 - c.n_ctx / 2;
  j["chunks"] = per_chunk > 0 ? s.positions / per_chunk : 0;
  return j;
}

}  // namespace brisk::eval
