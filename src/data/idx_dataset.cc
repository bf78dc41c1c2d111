// Dataset::Idx: MNIST-format images (and labels) as "image" uint8 [H, W, 1] and "label" int64 scalars, streamed
// item by item from the (gzip) files.
#include "data/dataset_impl.h"
#include "io/idx.h"

namespace strata::data {
namespace {

class IdxNode final : public internal::DatasetNode {
 public:
  IdxNode(std::string images, std::string labels)
      : DatasetNode(StrCat("idx(", images, labels.empty() ? "" : ", " + labels, ")"), {}),
        images_(std::move(images)),
        labels_(std::move(labels)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    STRATA_ASSIGN_OR_RETURN(auto images, io::IdxReader::Open(images_));
    std::unique_ptr<io::IdxReader> labels;
    if (!labels_.empty()) {
      STRATA_ASSIGN_OR_RETURN(labels, io::IdxReader::Open(labels_));
      if (labels->num_items() != images->num_items())
        return InvalidArgumentError("idx: '", images_, "' has ", images->num_items(), " items but '", labels_,
                                    "' has ", labels->num_items(), " labels");
      if (labels->item_shape().rank() != 0 || !IsInteger(labels->dtype()))
        return InvalidArgumentError("idx: labels in '", labels_, "' must be integer scalars, got ",
                                    DTypeName(labels->dtype()), labels->item_shape().ToString());
    }
    return std::unique_ptr<Iterator>(new It(this, std::move(images), std::move(labels)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const IdxNode* node, std::unique_ptr<io::IdxReader> images, std::unique_ptr<io::IdxReader> labels)
        : node_(node), images_(std::move(images)), labels_(std::move(labels)) {
      const Shape item = images_->item_shape();
      shape_ = item;
      if (item.rank() == 2) shape_.PushBack(1);  // [H, W] -> [H, W, 1]
    }

    StatusOr<bool> GetNext(Element* out) override {
      if (failed_) return false;
      const int64_t index = images_->items_read();
      Tensor image, label;
      Status s = Read(&image, &label);
      if (!s.ok()) {
        failed_ = true;  // a truncated file cannot continue
        return s;
      }
      if (!image.defined()) return false;
      out->tensors.clear();
      out->tensors.emplace_back("image", *image.Reshaped(shape_));
      if (label.defined()) out->tensors.emplace_back("label", label);
      out->metadata.assign(1, Metadata{{kMetaSource, node_->images_}, {kMetaRecord, StrCat(index)}});
      return true;
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      STRATA_ASSIGN_OR_RETURN(int64_t k, images_->SkipItems(n));
      if (labels_) STRATA_RETURN_IF_ERROR(labels_->SkipItems(k).status());
      return k;
    }

   private:
    Status Read(Tensor* image, Tensor* label) {
      STRATA_ASSIGN_OR_RETURN(bool more, images_->ReadItem(image));
      if (!more) {
        *image = Tensor();
        return Status::OK();
      }
      if (!labels_) return Status::OK();
      Tensor raw;
      STRATA_ASSIGN_OR_RETURN(more, labels_->ReadItem(&raw));
      if (!more) return InternalError("idx label file ended early");
      int64_t v = 0;
      switch (raw.dtype()) {
        case DType::kUInt8: v = raw.data<uint8_t>()[0]; break;
        case DType::kInt8: v = raw.data<int8_t>()[0]; break;
        case DType::kInt16: v = raw.data<int16_t>()[0]; break;
        default: v = raw.data<int32_t>()[0]; break;
      }
      *label = internal::Int64Scalar(v);
      return Status::OK();
    }

    const IdxNode* node_;
    std::unique_ptr<io::IdxReader> images_, labels_;
    Shape shape_;
    bool failed_ = false;
  };

  std::string images_, labels_;
};

}  // namespace

Dataset Dataset::Idx(std::string images_path, std::string labels_path) {
  return internal::MakeDataset<IdxNode>(std::move(images_path), std::move(labels_path));
}

}  // namespace strata::data
