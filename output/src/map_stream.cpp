#include "brine/output/map_stream.h"

#include <stdexcept>

#include "brine/core/json.h"
#include "py_text.h"
#include "render_unstripped.h"

namespace brine::output {
namespace {

// The text of one `key: value` entry as it appears inside the rendering of a
// whole map: the rendering of the one-entry map minus the map's own brackets.
std::string_view Between(std::string_view text, std::string_view open, std::string_view close) {
  text.remove_prefix(open.size());
  text.remove_suffix(close.size());
  return text;
}

}  // namespace

MapStream::MapStream(std::string_view outputter, const OutputOptions& options, std::ostream& out)
    : outputter_(outputter), options_(options), out_(out) {
  if (!IsKnownOutputter(outputter)) throw UnknownOutputter("unknown outputter: " + std::string(outputter));
  if (outputter == "json") {
    mode_ = Mode::kJson;
  } else if (outputter == "nested") {
    mode_ = Mode::kNested;
  } else if (outputter == "yaml" && !(options.indent && *options.indent < 0)) {
    mode_ = Mode::kYamlBlock;
  } else {
    // txt/raw/highstate look at the map as a whole; flow yaml is one line.
    mode_ = Mode::kBuffered;
  }
}

MapStream::~MapStream() = default;

// Salt's display_output prints text.rstrip() and a newline. Streaming, only
// the whitespace at the very end is stripped, so each chunk's trailing
// whitespace is held back until more text follows it.
void MapStream::Write(std::string_view text) {
  const std::size_t body = py::RStripLength(text);
  if (body == 0) {
    held_.append(text);
    return;
  }
  pending_ += held_;
  if (body >= kFlushBytes) {
    // A big entry (one 50 MB return) goes out from the caller's text: a
    // copy in pending_ would be one more entry's size in RSS.
    Flush();
    out_.write(text.data(), static_cast<std::streamsize>(body));
  } else {
    pending_.append(text.data(), body);
  }
  held_.assign(text.substr(body));
  wrote_ = true;
  if (pending_.size() >= kFlushBytes) Flush();
}

// Written in large blocks: a listing can be tens of megabytes, and an
// ostream over stdout would otherwise make a system call every few KiB.
void MapStream::Flush() {
  out_.write(pending_.data(), static_cast<std::streamsize>(pending_.size()));
  pending_.clear();
}

void MapStream::CheckOrder(const std::string& key) {
  if (count_ > 0 && !py::CodePointLess(last_key_, key)) {
    throw std::logic_error("MapStream: key '" + key + "' is not after '" + last_key_ + "'");
  }
  last_key_ = key;
  ++count_;
}

void MapStream::JsonEntryHead(const std::string& key, std::string& text) const {
  const int indent = options_.indent.value_or(4);
  const JsonStyle style = JsonStyle::Python(indent < 0 ? -1 : indent);
  if (indent < 0) {
    text += count_ == 1 ? "{" : ", ";
  } else {
    text += count_ == 1 ? "{\n" : ",\n";
    text.append(static_cast<std::size_t>(indent), ' ');
  }
  WriteJsonString(key, style, text);
  text += ": ";
}

void MapStream::AddJson(std::string key, std::string_view json) {
  if (mode_ != Mode::kJson) {
    Add(std::move(key), ParseJson(json));
    return;
  }
  CheckOrder(key);
  const int indent = options_.indent.value_or(4);
  scratch_.clear();
  // Room for the text laid out (indents added), so a big value is written
  // without the string doubling: pages reserved and never written cost no RSS.
  if (json.size() >= kFlushBytes) scratch_.reserve(json.size() + json.size() / 2 + key.size() + 64);
  JsonEntryHead(key, scratch_);
  WriteJsonText(json, JsonStyle::Python(indent < 0 ? -1 : indent), 1, scratch_);
  Write(scratch_);
}

void MapStream::AddJsonObject(std::string key, std::span<const JsonMember> members) {
  if (mode_ != Mode::kJson) {
    ValueMap object;
    object.reserve(members.size());
    for (const JsonMember& m : members) object.emplace_back(std::string(m.name), ParseJson(m.json));
    Add(std::move(key), Value(std::move(object)));
    return;
  }
  CheckOrder(key);
  // Laid out as Transcode lays out an object at level 1 (core/src/json.cpp):
  // items at level 2, the closing brace at level 1.
  const int indent = options_.indent.value_or(4);
  const JsonStyle style = *JsonMemberStyle();
  scratch_.clear();
  JsonEntryHead(key, scratch_);
  scratch_ += '{';
  if (!members.empty()) {
    bool first = true;
    for (const JsonMember& m : members) {
      if (!first) scratch_ += indent < 0 ? ", " : ",";
      if (indent >= 0) {
        scratch_ += '\n';
        scratch_.append(static_cast<std::size_t>(indent) * 2, ' ');
      }
      first = false;
      AppendMemberHead(m.name, style, scratch_);
      if (m.laid_out) {
        scratch_ += m.json;
      } else {
        WriteJsonText(m.json, style, 2, scratch_);
      }
    }
    if (indent >= 0) {
      scratch_ += '\n';
      scratch_.append(static_cast<std::size_t>(indent), ' ');
    }
  }
  scratch_ += '}';
  Write(scratch_);
}

std::optional<JsonStyle> MapStream::JsonMemberStyle() const {
  if (mode_ != Mode::kJson) return std::nullopt;
  const int indent = options_.indent.value_or(4);
  return JsonStyle::Python(indent < 0 ? -1 : indent);
}

void MapStream::AppendMemberHead(std::string_view name, const JsonStyle& style, std::string& text) {
  // Members come in the same order entry after entry: the one after the
  // last found is tried first.
  const std::size_t n = member_heads_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_head_ + k) % n;
    if (member_heads_[i].first == name) {
      text += member_heads_[i].second;
      next_head_ = i + 1;
      return;
    }
  }
  const std::size_t at = text.size();
  WriteJsonString(name, style, text);
  text += ": ";
  // The style is the stream's own, the same for every call. Past a few
  // names (a caller with many) the rest are encoded each time.
  if (n < kMemberHeads) {
    member_heads_.emplace_back(name, text.substr(at));
    next_head_ = n + 1;
  }
}

void MapStream::Add(std::string key, Value value) {
  CheckOrder(key);
  if (mode_ == Mode::kBuffered) {
    buffered_.emplace_back(std::move(key), std::move(value));
    return;
  }
  ValueMap entry;  // not ValueMap{{...}}: an initializer list would copy the value
  entry.emplace_back(std::move(key), std::move(value));
  const Value one(std::move(entry));
  switch (mode_) {
    case Mode::kJson: {
      const int indent = options_.indent.value_or(4);
      std::string& text = scratch_;
      text.clear();
      WriteJson(one, JsonStyle::Python(indent < 0 ? -1 : indent), text);
      if (indent < 0) {
        Write(count_ == 1 ? "{" : ", ");
        Write(Between(text, "{", "}"));
      } else {
        Write(count_ == 1 ? "{\n" : ",\n");
        Write(Between(text, "{\n", "\n}"));
      }
      break;
    }
    case Mode::kNested: {
      // Lines of the whole map are joined by "\n"; each entry is a run of them.
      if (count_ > 1) Write("\n");
      Write(RenderUnstripped("nested", one, options_));
      break;
    }
    // Block mappings are one entry after another, each starting in column 0.
    case Mode::kYamlBlock: Write(RenderUnstripped("yaml", one, options_)); break;
    case Mode::kBuffered: break;
  }
}

void MapStream::Finish() {
  if (count_ == 0) {
    out_ << Render(outputter_, Value::EmptyMap(), options_);
    return;
  }
  if (mode_ == Mode::kBuffered) {
    out_ << Render(outputter_, Value(std::move(buffered_)), options_);
    return;
  }
  if (mode_ == Mode::kJson) Write(options_.indent.value_or(4) < 0 ? "}" : "\n}");
  if (wrote_) pending_ += '\n';
  Flush();
  held_.clear();
}

}  // namespace brine::output
