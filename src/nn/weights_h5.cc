// LoadKerasWeights: Keras weight files through libhdf5 (Debian's serial build; hdf5.h is included here only).
//
// Two layouts, both keyed by layer name and, within a layer, by weight order (Keras's own loaders match the same
// way; strata's layers declare their weights in Keras's order):
//   Keras 3 `.weights.h5`: layers/<key>/vars/0, 1, ... with the layer name in the "name" attribute of vars (nested
//     models: layers/<key>/layers/...). Seed-generator state (dropout RNG) is not a model weight and is skipped.
//   legacy HDF5 (model.save("m.h5"), keras.applications' downloads): [model_weights/] with attribute layer_names,
//     and per layer group attribute weight_names, each the path of a dataset under that group.
// Every shape and name is checked before any data is read; the model changes only when everything matches.
// HDF5's automatic error printing is switched off around every call and its error stack becomes the message.
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "core/file_util.h"
#include "nn/internal.h"

namespace strata::nn {
namespace {

// Silences HDF5's stderr error stack for a scope (restoring the previous handler).
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The current HDF5 error stack as one line (innermost first), then cleared.
std::string Hdf5ErrorText() {
  std::vector<std::string> lines;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* v = static_cast<std::vector<std::string>*>(out);
        if (e->desc && *e->desc) v->push_back(e->desc);
        return 0;
      },
      &lines);
  H5Eclear2(H5E_DEFAULT);
  std::reverse(lines.begin(), lines.end());
  return lines.empty() ? std::string("unknown HDF5 error") : StrJoin(lines, ": ");
}

// An HDF5 identifier closed with the matching H5?close.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct FileWeight {
  std::string path;  // dataset path in the file
  std::vector<int64_t> dims;
  bool is_float = false;
};
struct FileLayer {
  std::string name;
  std::vector<FileWeight> weights;
};

class Reader {
 public:
  Reader(hid_t file, std::string path) : file_(file), path_(std::move(path)) {}

  Status Read(std::vector<FileLayer>* layers) {
    if (Exists("/layers") && !Exists("/model_weights")) {
      format_ = "Keras 3 .weights.h5";
      return ReadKeras3("/layers", layers);
    }
    format_ = "legacy Keras HDF5";
    return ReadLegacy(Exists("/model_weights") ? "/model_weights" : "/", layers);
  }
  const std::string& format() const { return format_; }

 private:
  bool Exists(const std::string& p) { return H5Lexists(file_, p.c_str(), H5P_DEFAULT) > 0; }

  Status Error(const std::string& what) {
    return DataLossError("weights file '", path_, "': ", what, ": ", Hdf5ErrorText());
  }

  StatusOr<std::vector<std::string>> Children(const std::string& group) {
    Handle g(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok()) return Error(StrCat("cannot open group '", group, "'"));
    H5G_info_t info;
    if (H5Gget_info(g.get(), &info) < 0) return Error(StrCat("cannot list group '", group, "'"));
    std::vector<std::string> out;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      const ssize_t n = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (n < 0) return Error(StrCat("cannot read a link name in '", group, "'"));
      std::string name(static_cast<size_t>(n), '\0');
      H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT);
      out.push_back(std::move(name));
    }
    return out;
  }

  bool IsGroup(const std::string& p) {
    H5O_info_t info;
    return H5Oget_info_by_name(file_, p.c_str(), &info, H5P_DEFAULT) >= 0 && info.type == H5O_TYPE_GROUP;
  }

  // A string-list attribute (fixed or variable length); h5py splits long ones into name0, name1, ...
  StatusOr<std::vector<std::string>> StringsAttr(const std::string& object, const std::string& name) {
    Handle obj(H5Oopen(file_, object.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj.ok()) return Error(StrCat("cannot open '", object, "'"));
    std::vector<std::string> out;
    if (H5Aexists(obj.get(), name.c_str()) > 0) {
      STRATA_RETURN_IF_ERROR(ReadStrings(obj.get(), object, name, &out));
      return out;
    }
    bool any = false;
    for (int i = 0; H5Aexists(obj.get(), StrCat(name, i).c_str()) > 0; ++i) {
      STRATA_RETURN_IF_ERROR(ReadStrings(obj.get(), object, StrCat(name, i), &out));
      any = true;
    }
    if (!any) return DataLossError("weights file '", path_, "': '", object, "' has no attribute '", name, "'");
    return out;
  }

  Status ReadStrings(hid_t obj, const std::string& object, const std::string& name, std::vector<std::string>* out) {
    Handle attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return Error(StrCat("cannot open attribute '", name, "' of '", object, "'"));
    Handle type(H5Aget_type(attr.get()), H5Tclose);
    Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (!type.ok() || !space.ok()) return Error(StrCat("cannot read attribute '", name, "' of '", object, "'"));
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n <= 0) return Status::OK();  // an empty list (h5py writes it as an empty float array)
    if (H5Tget_class(type.get()) != H5T_STRING)
      return DataLossError("weights file '", path_, "': attribute '", name, "' of '", object, "' is not a string list");
    if (H5Tis_variable_str(type.get()) > 0) {
      std::vector<char*> buf(static_cast<size_t>(n), nullptr);
      Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));  // HDF5 does not convert between ASCII and UTF-8
      if (H5Aread(attr.get(), mem.get(), buf.data()) < 0) return Error(StrCat("cannot read attribute '", name, "'"));
      for (char* s : buf) out->push_back(s ? s : "");
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buf.data());
      return Status::OK();
    }
    const size_t size = H5Tget_size(type.get());
    if (size == 0 || size > (1u << 20)) return DataLossError("weights file '", path_, "': bad string size in '", name, "'");
    std::vector<char> buf(static_cast<size_t>(n) * size + 1, '\0');
    if (H5Aread(attr.get(), type.get(), buf.data()) < 0) return Error(StrCat("cannot read attribute '", name, "'"));
    for (hssize_t i = 0; i < n; ++i) {
      const char* s = buf.data() + i * size;
      out->push_back(std::string(s, strnlen(s, size)));
    }
    return Status::OK();
  }

  StatusOr<FileWeight> Describe(const std::string& dataset) {
    Handle ds(H5Dopen2(file_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) return Error(StrCat("cannot open dataset '", dataset, "'"));
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    if (!space.ok() || !type.ok()) return Error(StrCat("cannot read the type of '", dataset, "'"));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 8) return DataLossError("weights file '", path_, "': dataset '", dataset, "' has rank ", rank);
    hsize_t dims[8];
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    FileWeight w;
    w.path = dataset;
    for (int i = 0; i < rank; ++i) w.dims.push_back(static_cast<int64_t>(dims[i]));
    w.is_float = H5Tget_class(type.get()) == H5T_FLOAT;
    return w;
  }

  Status ReadKeras3(const std::string& group, std::vector<FileLayer>* layers) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, Children(group));
    for (const std::string& key : keys) {
      if (key.rfind("seed_generator", 0) == 0) continue;  // RNG state, not a weight
      const std::string p = StrCat(group, "/", key);
      if (!IsGroup(p)) continue;
      const std::string vars = p + "/vars";
      if (Exists(vars)) {
        FileLayer layer;
        auto name = StringsAttr(vars, "name");
        layer.name = name.ok() && name->size() == 1 ? (*name)[0] : key;
        STRATA_ASSIGN_OR_RETURN(std::vector<std::string> idx, Children(vars));
        std::sort(idx.begin(), idx.end(), [](const std::string& a, const std::string& b) {
          return a.size() != b.size() ? a.size() < b.size() : a < b;  // "2" before "10"
        });
        for (const std::string& i : idx) {
          STRATA_ASSIGN_OR_RETURN(FileWeight w, Describe(vars + "/" + i));
          layer.weights.push_back(std::move(w));
        }
        if (!layer.weights.empty()) layers->push_back(std::move(layer));
      }
      // Nested layers and models keep their own layers/ group; other subgroups hold sub-layers' state.
      STRATA_ASSIGN_OR_RETURN(std::vector<std::string> sub, Children(p));
      for (const std::string& s : sub)
        if (s != "vars" && IsGroup(p + "/" + s)) STRATA_RETURN_IF_ERROR(ReadKeras3(p + "/" + s, layers));
    }
    return Status::OK();
  }

  Status ReadLegacy(const std::string& base, std::vector<FileLayer>* layers) {
    const std::string prefix = base == "/" ? "" : base;
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, StringsAttr(base, "layer_names"));
    for (const std::string& name : names) {
      const std::string g = StrCat(prefix, "/", name);
      STRATA_ASSIGN_OR_RETURN(std::vector<std::string> weight_names, StringsAttr(g, "weight_names"));
      FileLayer layer;
      layer.name = name;
      for (const std::string& w : weight_names) {
        STRATA_ASSIGN_OR_RETURN(FileWeight fw, Describe(StrCat(g, "/", w)));
        layer.weights.push_back(std::move(fw));
      }
      if (!layer.weights.empty()) layers->push_back(std::move(layer));
    }
    return Status::OK();
  }

  hid_t file_;
  std::string path_;
  std::string format_;
};

std::string DimsText(const std::vector<int64_t>& d) { return Shape(d).ToString(); }

// An open Keras weights file: HDF5's error printing silenced while it lives, its layer table read.
class KerasFile {
 public:
  static StatusOr<std::unique_ptr<KerasFile>> Open(const std::string& path) {
    if (!FileExists(path)) return NotFoundError("weights file '", path, "' does not exist");
    std::unique_ptr<KerasFile> k(new KerasFile(path));
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return DataLossError("weights file '", path, "' is not an HDF5 file (expected a Keras .weights.h5 or .h5)");
    }
    k->file_.emplace(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!k->file_->ok())
      return DataLossError("cannot open weights file '", path, "' as HDF5 (a Keras .weights.h5 or .h5 file that is "
                           "truncated or damaged?): ", Hdf5ErrorText());
    k->reader_ = std::make_unique<Reader>(k->file_->get(), path);
    STRATA_RETURN_IF_ERROR(k->reader_->Read(&k->layers_));
    return k;
  }
  const std::vector<FileLayer>& layers() const { return layers_; }
  const std::string& format() const { return reader_->format(); }
  // One dataset as a float32 tensor of `shape` (its own dims when empty).
  StatusOr<Tensor> ReadFloat(const FileWeight& fw, const Shape& shape) const {
    Handle ds(H5Dopen2(file_->get(), fw.path.c_str(), H5P_DEFAULT), H5Dclose);
    Tensor t = Tensor::Empty(DType::kFloat32, shape);
    if (!ds.ok() || H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data<float>()) < 0)
      return DataLossError("weights file '", path_, "': cannot read '", fw.path, "': ", Hdf5ErrorText());
    return t;
  }

 private:
  explicit KerasFile(const std::string& path) : path_(path) {}
  QuietHdf5 quiet_;  // first: silent before the file is probed, restored after it is closed
  std::string path_;
  std::optional<Handle> file_;
  std::unique_ptr<Reader> reader_;
  std::vector<FileLayer> layers_;
};

}  // namespace

Status LoadKerasWeights(Model& model, const std::string& path) {
  if (!model.built()) return FailedPreconditionError("LoadKerasWeights: build model '", model.name(), "' first");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<KerasFile> keras, KerasFile::Open(path));
  const std::vector<FileLayer>& file_layers = keras->layers();

  std::map<std::string, const FileLayer*> by_name;
  for (const FileLayer& l : file_layers) by_name[l.name] = &l;
  std::vector<std::string> problems;
  std::vector<std::pair<const WeightSpec*, const FileWeight*>> pairs;
  std::map<std::string, bool> model_layers;
  for (Layer* layer : model.layers()) {
    model_layers[layer->name()] = true;
    const std::vector<WeightSpec>& ws = layer->weights();
    auto it = by_name.find(layer->name());
    const std::vector<FileWeight> none;
    const std::vector<FileWeight>& fw = it == by_name.end() ? none : it->second->weights;
    for (size_t i = 0; i < std::max(ws.size(), fw.size()); ++i) {
      if (i >= fw.size()) {
        problems.push_back(StrCat("missing '", ws[i].name, "' ", ws[i].shape.ToString()));
      } else if (i >= ws.size()) {
        problems.push_back(StrCat("unexpected '", fw[i].path, "' ", DimsText(fw[i].dims), " (layer '", layer->name(),
                                  "' has ", ws.size(), " weights)"));
      } else if (Shape(fw[i].dims) != ws[i].shape || !fw[i].is_float) {
        problems.push_back(StrCat("'", ws[i].name, "' expects float ", ws[i].shape.ToString(), ", file has ",
                                  fw[i].is_float ? "float " : "non-float ", DimsText(fw[i].dims), " at '", fw[i].path,
                                  "'"));
      } else {
        pairs.emplace_back(&ws[i], &fw[i]);
      }
    }
  }
  for (const FileLayer& l : file_layers)
    if (!model_layers.count(l.name))
      for (const FileWeight& w : l.weights)
        problems.push_back(StrCat("unexpected '", w.path, "' ", DimsText(w.dims), " (no layer '", l.name, "')"));
  if (!problems.empty()) {
    int missing = 0, unexpected = 0;
    for (const std::string& p : problems) missing += p.rfind("missing", 0) == 0, unexpected += p.rfind("unexpected", 0) == 0;
    return InvalidArgumentError("weights file '", path, "' (", keras->format(), ") does not match model '",
                                model.name(), "': ", missing, " missing, ", unexpected, " unexpected and ",
                                problems.size() - missing - unexpected, " mis-shaped weight(s): ",
                                StrJoin(problems, "; "));
  }

  std::map<std::string, Tensor> values;
  for (const auto& [spec, fw] : pairs) {
    STRATA_ASSIGN_OR_RETURN(values[spec->name], keras->ReadFloat(*fw, spec->shape));
  }
  return model.SetWeights(values);
}

StatusOr<std::map<std::string, Tensor>> ReadKerasWeightsFor(const Model& model, const std::string& path) {
  if (!model.built()) return FailedPreconditionError("ReadKerasWeightsFor: build model '", model.name(), "' first");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<KerasFile> keras, KerasFile::Open(path));
  const std::vector<FileLayer>& file_layers = keras->layers();
  std::map<std::string, const FileLayer*> by_name;
  for (const FileLayer& l : file_layers) by_name[l.name] = &l;
  std::map<std::string, Tensor> out;
  auto read = [&](const FileWeight& fw, const std::string& key) -> Status {
    if (!fw.is_float)
      return InvalidArgumentError("weights file '", path, "': '", fw.path, "' is not a float tensor");
    STRATA_ASSIGN_OR_RETURN(out[key], keras->ReadFloat(fw, Shape(fw.dims)));
    return Status::OK();
  };
  std::map<std::string, bool> model_layers;
  for (const Layer* layer : model.layers()) {
    model_layers[layer->name()] = true;
    auto it = by_name.find(layer->name());
    if (it == by_name.end()) continue;
    const std::vector<WeightSpec>& ws = layer->weights();
    const std::vector<FileWeight>& fw = it->second->weights;
    for (size_t i = 0; i < fw.size(); ++i) STRATA_RETURN_IF_ERROR(read(fw[i], i < ws.size() ? ws[i].name : fw[i].path));
  }
  for (const FileLayer& l : file_layers)
    if (!model_layers.count(l.name))
      for (const FileWeight& w : l.weights) STRATA_RETURN_IF_ERROR(read(w, w.path));
  return out;
}

}  // namespace strata::nn
