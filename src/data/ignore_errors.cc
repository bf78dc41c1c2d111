// Dataset::IgnoreErrors: drops elements whose GetNext failed (tf.data.experimental.ignore_errors), counting them per
// epoch as "error: <CODE>". Useful after a decoding Map to drop and count corrupt images.
#include "core/logging.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

// An input that fails this many times in a row with the same message is not advancing: give up.
constexpr int kMaxRepeatedErrors = 10000;

class IgnoreErrorsNode final : public internal::DatasetNode {
 public:
  IgnoreErrorsNode(Dataset input, std::shared_ptr<QualityStats> stats)
      : DatasetNode("ignore_errors", {std::move(input)}), stats_(std::move(stats)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input), options.epoch));
  }

 private:
  class It final : public Iterator {
   public:
    It(const IgnoreErrorsNode* node, std::unique_ptr<Iterator> input, int64_t epoch)
        : node_(node), input_(std::move(input)), epoch_(epoch) {}

    StatusOr<bool> GetNext(Element* out) override {
      std::string last;
      int repeated = 0;
      for (;;) {
        auto more = input_->GetNext(out);
        if (more.ok()) return more;
        if (more.status().message() == last && ++repeated >= kMaxRepeatedErrors)
          return std::move(more).status().WithContext(
              StrCat("ignore_errors: the input failed ", kMaxRepeatedErrors, " times in a row with the same error"));
        if (more.status().message() != last) repeated = 0;
        last = more.status().message();
        if (node_->stats_) node_->stats_->AddDropped(epoch_, StrCat("error: ", StatusCodeName(more.status().code())));
        if (VerboseEnabled("data")) LogInfo("ignore_errors dropped an element: ", more.status().message());
      }
    }

   private:
    const IgnoreErrorsNode* node_;
    std::unique_ptr<Iterator> input_;
    int64_t epoch_;
  };

  std::shared_ptr<QualityStats> stats_;
};

}  // namespace

Dataset Dataset::IgnoreErrors(std::shared_ptr<QualityStats> stats) const {
  return internal::MakeDataset<IgnoreErrorsNode>(*this, std::move(stats));
}

}  // namespace strata::data
