#include "b2ndfs/format/meta_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <new>
#include <set>
#include <string_view>
#include <utility>

#include "b2ndfs/format/expression.h"
#include "b2ndfs/format/vlen.h"
#include "json_text.h"
#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::AppendBase64;
using internal::AppendDouble;
using internal::AppendQuoted;
using internal::kMaxJsonText;
using internal::Layout;
using internal::MsgpackText;
using internal::NewLine;

// vlmeta values are pretty-printed when that stays small; bigger ones are
// written on one line (indentation would multiply the size of deep, wide
// values), and contents over kMaxJsonText are left out.
constexpr size_t kMaxPrettyVlmeta = size_t{1} << 20;

// ---- the meta.json document -------------------------------------------------

// A small JSON tree for the document itself (its values are few and small).
struct Json {
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject, kRaw };
  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;  // kString, or pre-rendered JSON for kRaw
  std::vector<std::string> keys;
  std::vector<Json> items;

  static Json Null() { return Json(); }
  static Json Bool(bool b) {
    Json j;
    j.kind = Kind::kBool;
    j.boolean = b;
    return j;
  }
  static Json Int(int64_t i) {
    Json j;
    j.kind = Kind::kInt;
    j.integer = i;
    return j;
  }
  static Json Double(double d) {
    Json j;
    j.kind = Kind::kDouble;
    j.number = d;
    return j;
  }
  static Json String(std::string s) {
    Json j;
    j.kind = Kind::kString;
    j.text = std::move(s);
    return j;
  }
  static Json Raw(std::string s) {
    Json j;
    j.kind = Kind::kRaw;
    j.text = std::move(s);
    return j;
  }
  static Json Array() {
    Json j;
    j.kind = Kind::kArray;
    return j;
  }
  static Json Object() {
    Json j;
    j.kind = Kind::kObject;
    return j;
  }
  static Json Ints(const std::vector<int64_t>& values) {
    Json j = Array();
    for (int64_t v : values) j.items.push_back(Int(v));
    return j;
  }
  Json& Add(std::string key, Json value) {
    keys.push_back(std::move(key));
    items.push_back(std::move(value));
    return *this;
  }
  bool IsContainer() const { return kind == Kind::kArray || kind == Kind::kObject; }
};

void WritePretty(const Json& v, int indent, std::string* out) {
  switch (v.kind) {
    case Json::Kind::kNull:
      *out += "null";
      return;
    case Json::Kind::kBool:
      *out += v.boolean ? "true" : "false";
      return;
    case Json::Kind::kInt:
      *out += std::to_string(v.integer);
      return;
    case Json::Kind::kDouble:
      AppendDouble(v.number, false, out);
      return;
    case Json::Kind::kString:
      AppendQuoted(v.text, out);
      return;
    case Json::Kind::kRaw:
      *out += v.text;
      return;
    case Json::Kind::kArray: {
      if (v.items.empty()) {
        *out += "[]";
        return;
      }
      bool scalars = true;
      for (const Json& item : v.items) scalars = scalars && !item.IsContainer();
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) *out += scalars ? ", " : ",";
        if (!scalars) NewLine(indent + 2, out);
        WritePretty(v.items[i], indent + 2, out);
      }
      if (!scalars) NewLine(indent, out);
      out->push_back(']');
      return;
    }
    case Json::Kind::kObject: {
      if (v.items.empty()) {
        *out += "{}";
        return;
      }
      out->push_back('{');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        NewLine(indent + 2, out);
        AppendQuoted(v.keys[i], out);
        *out += ": ";
        WritePretty(v.items[i], indent + 2, out);
      }
      NewLine(indent, out);
      out->push_back('}');
      return;
    }
  }
}

std::string RenderDocument(const Json& root) {
  std::string out;
  WritePretty(root, 0, &out);
  out.push_back('\n');
  return out;
}

Json NdMetaJson(const NdMeta& meta) {
  Json j = Json::Object();
  j.Add("version", Json::Int(meta.version));
  j.Add("ndim", Json::Int(meta.ndim));
  j.Add("shape", Json::Ints(meta.shape));
  j.Add("chunkshape", Json::Ints(meta.chunkshape));
  if (meta.has_blockshape) j.Add("blockshape", Json::Ints(meta.blockshape));
  if (meta.dtype_format) j.Add("dtype_format", Json::Int(*meta.dtype_format));
  if (meta.dtype) j.Add("dtype", Json::String(*meta.dtype));
  return j;
}

// The vlmeta object sits at indent 4 of the document ("vlmeta": {"name": ...}).
Json VlmetaValue(const NamedBytes& layer, int indent = 4) {
  const std::span<const uint8_t> content(layer.content);
  if (content.size() > kMaxJsonText) {
    Json j = Json::Object();
    j.Add("size", Json::Int(static_cast<int64_t>(content.size())));
    j.Add("omitted", Json::Bool(true));
    return j;
  }
  if (auto pretty = MsgpackText(content, Layout::kPretty, indent, kMaxPrettyVlmeta)) {
    return Json::Raw(std::move(*pretty));
  }
  if (auto compact = MsgpackText(content, Layout::kCompact, 0, kMaxJsonText)) {
    return Json::Raw(std::move(*compact));
  }
  Json j = Json::Object();
  j.Add("base64", Json::String(Base64Encode(content)));
  return j;
}

// Whether a carrier's expression is in the grammar b2ndfs evaluates
// (format/expression.h), and whether the store evaluated it.
Json EvaluationJson(const std::vector<uint8_t>& recipe, const MetaJsonInput& input) {
  Json j = Json::Object();
  if (recipe.empty()) return Json::Null();
  auto expression = RecipeExpressionOf(recipe);
  if (!expression.ok()) {
    j.Add("error", Json::String(expression.status().message()));
    return j;
  }
  if (!*expression) return Json::Null();
  auto check = CheckElementwiseExpression((*expression)->expression, (*expression)->operands);
  if (!check.ok()) {
    j.Add("error", Json::String("not evaluable: " + check.status().message()));
    return j;
  }
  j.Add("grammar", Json::String("elementwise"));
  Json used = Json::Array();
  for (const std::string& name : check->operands) used.items.push_back(Json::String(name));
  j.Add("operands", std::move(used));
  const bool evaluated = !input.evaluated_operands.empty();
  j.Add("evaluated", Json::Bool(evaluated));
  if (evaluated) {
    Json paths = Json::Object();
    for (const auto& [name, path] : input.evaluated_operands) paths.Add(name, Json::String(path));
    j.Add("paths", std::move(paths));
  } else if (!input.evaluation_error.empty()) {
    j.Add("error", Json::String(input.evaluation_error));
  }
  return j;
}

}  // namespace

std::string RenderMetaJson(const MetaJsonInput& input) {
  Json root = Json::Object();
  root.Add("format", Json::String(input.format));
  if (!input.content.empty()) {
    root.Add("content", Json::String(input.content));
    if (!input.serializer.empty()) root.Add("serializer", Json::String(input.serializer));
    if (input.recipe) {
      // A missing recipe is said, not left out silently.
      root.Add("recipe", input.recipe->content.empty()
                             ? Json::String("(vlmeta '" + input.recipe->name + "' is missing)")
                             : VlmetaValue(*input.recipe, 2));
      Json evaluation = EvaluationJson(input.recipe->content, input);
      if (evaluation.kind != Json::Kind::kNull) root.Add("evaluation", std::move(evaluation));
    }
  }
  root.Add("version", Json::Int(input.version));
  root.Add("ndim", Json::Int(static_cast<int64_t>(input.shape.size())));
  root.Add("shape", Json::Ints(input.shape));
  root.Add("chunkshape", Json::Ints(input.chunkshape));
  root.Add("blockshape", Json::Ints(input.blockshape));
  root.Add("dtype", input.dtype ? Json::String(*input.dtype) : Json::Null());
  root.Add("dtype_format", input.dtype_format ? Json::Int(*input.dtype_format) : Json::Null());
  root.Add("itemsize", Json::Int(input.itemsize));
  root.Add("nbytes", Json::Int(input.nbytes));
  root.Add("cbytes", Json::Int(input.cbytes));
  if (input.cbytes > 0) {
    const double ratio = static_cast<double>(input.nbytes) / static_cast<double>(input.cbytes);
    root.Add("cratio", Json::Double(std::round(ratio * 1000.0) / 1000.0));
  } else {
    root.Add("cratio", Json::Null());
  }
  root.Add("nchunks", Json::Int(input.nchunks));

  const FrameInfo* frame = input.frame;
  root.Add("codec", frame ? Json::String(CodecName(frame->codec, frame->udcodec)) : Json::Null());
  root.Add("clevel", frame ? Json::Int(frame->clevel) : Json::Null());
  Json filters = Json::Array();
  if (frame) {
    for (size_t i = 0; i < frame->filters.size(); ++i) {
      if (frame->filters[i] == 0) continue;  // BLOSC_NOFILTER
      Json f = Json::Object();
      f.Add("name", Json::String(FilterName(frame->filters[i])));
      f.Add("meta", Json::Int(frame->filters_meta[i]));
      filters.items.push_back(std::move(f));
    }
  }
  root.Add("filters", std::move(filters));
  if (input.unsupported) root.Add("unsupported", Json::String(*input.unsupported));
  if (input.chunks_present) {
    Json proxy = Json::Object();
    proxy.Add("chunks_present", Json::Ints(*input.chunks_present));
    proxy.Add("chunks_absent",
              Json::Int(input.nchunks - static_cast<int64_t>(input.chunks_present->size())));
    root.Add("proxy", std::move(proxy));
  }
  std::vector<std::string> notes;
  if (input.ndmeta) notes = input.ndmeta->notes;
  if (std::optional<std::string> note = CheckDtype(input.dtype, input.itemsize).note) {
    notes.push_back(std::move(*note));
  }
  notes.insert(notes.end(), input.notes.begin(), input.notes.end());
  if (!notes.empty()) {
    Json list = Json::Array();
    for (std::string& n : notes) list.items.push_back(Json::String(std::move(n)));
    root.Add("notes", std::move(list));
  }

  Json metalayers = Json::Object();
  Json names = Json::Array();
  if (frame) {
    for (const NamedBytes& m : frame->metalayers) names.items.push_back(Json::String(m.name));
  }
  metalayers.Add("names", std::move(names));
  if (input.ndmeta) metalayers.Add(input.ndmeta->format, NdMetaJson(*input.ndmeta));
  for (const NamedBytes& tag : input.tags) metalayers.Add(tag.name, VlmetaValue(tag, 4));
  root.Add("metalayers", std::move(metalayers));

  Json vlmeta = Json::Object();
  for (const NamedBytes& layer : input.vlmeta) vlmeta.Add(layer.name, VlmetaValue(layer));
  root.Add("vlmeta", std::move(vlmeta));

  Json files = Json::Object();
  for (const MetaJsonInput::FileKind& kind : input.files) {
    Json f = Json::Object();
    if (!kind.absent.empty()) {
      f.Add("absent", Json::String(kind.absent));
      files.Add(kind.name, std::move(f));
      continue;
    }
    f.Add("shape", Json::Ints(kind.shape));
    f.Add("size", Json::Int(kind.size));
    if (!kind.note.empty()) f.Add("note", Json::String(kind.note));
    files.Add(kind.name, std::move(f));
  }
  root.Add("files", std::move(files));
  return RenderDocument(root);
}

std::string RenderErrorJson(const std::string& message) {
  Json root = Json::Object();
  root.Add("error", Json::String(message));
  return RenderDocument(root);
}

std::optional<std::string> MsgpackToJson(std::span<const uint8_t> bytes) {
  return MsgpackText(bytes, Layout::kCompact, 0, kMaxJsonText);
}

std::string Base64Encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  AppendBase64(bytes, &out);
  return out;
}

}  // namespace b2ndfs::format
