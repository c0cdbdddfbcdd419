// trace_events.cpp: a Chrome trace's events, one at a time (see trace_events.hpp).
#include "models/trace_events.hpp"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gradsync {
namespace {

using json = nlohmann::json;

// Builder: one JSON value built from SAX calls (an event, or deviceProperties).
class Builder {
 public:
  bool active() const { return !stack_.empty(); }
  json& value() { return value_; }
  void begin(json container) {
    if (stack_.empty()) {
      value_ = std::move(container);
      stack_.push_back(&value_);
    } else {
      stack_.push_back(&put(std::move(container)));
    }
  }
  void key(std::string k) { key_ = std::move(k); }
  // has: whether the innermost container is an object that holds `k` already.
  bool has(const std::string& k) const { return stack_.back()->is_object() && stack_.back()->contains(k); }
  void add(json scalar) { put(std::move(scalar)); }
  // end: closes the innermost container; true when that was the value itself.
  bool end() {
    stack_.pop_back();
    return stack_.empty();
  }

 private:
  json& put(json v) {
    json& top = *stack_.back();
    if (top.is_object()) return top[key_] = std::move(v);
    top.push_back(std::move(v));
    return top.back();
  }
  json value_;
  std::vector<json*> stack_;
  std::string key_;
};

class EventReader : public nlohmann::json_sax<json> {
 public:
  explicit EventReader(const std::function<void(const json&, std::size_t)>& on_event) : on_event_(on_event) {}
  TraceShape shape;
  std::size_t events() const { return index_; }

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v); }
  bool string(string_t& v) override { return scalar(std::move(v)); }
  bool binary(binary_t& v) override { return scalar(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      if (!root_keys_.insert(k).second) throw TraceDuplicateKey(k, std::nullopt, "the top level");
      root_key_ = k;
    }
    if (building_) {
      if (builder_.has(k)) {
        if (properties_) throw TraceDuplicateKey(k, std::nullopt, "deviceProperties");
        throw TraceDuplicateKey(k, index_, "");
      }
      builder_.key(k);
    }
    return true;
  }
  // Rethrown as its own type: a syntax error keeps its byte for the caller's line and column.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    if (const auto* p = dynamic_cast<const json::parse_error*>(&ex)) throw *p;
    if (const auto* o = dynamic_cast<const json::out_of_range*>(&ex)) throw *o;
    throw json::other_error::create(501, ex.what(), nullptr);
  }

 private:
  // The event list's depth: 1 for a bare list, 2 for the object's "traceEvents".
  bool in_event_list() const { return list_depth_ > 0 && depth_ == list_depth_; }

  bool scalar(json v) {
    if (building_) {
      builder_.add(std::move(v));
    } else if (in_event_list()) {
      on_event_(v, index_++);  // an element that is not an object: the caller skips it
    }
    return true;
  }
  bool open(json container) {
    const bool array = container.is_array();
    if (building_) {
      builder_.begin(std::move(container));
    } else if (depth_ == 0) {
      shape.root_object = !array;
      shape.root_array = array;
      if (array) list_depth_ = 1;
    } else if (in_event_list()) {
      building_ = true;  // an event
      builder_.begin(std::move(container));
    } else if (depth_ == 1 && shape.root_object && root_key_ == "traceEvents" && array) {
      shape.event_list = true;
      list_depth_ = 2;
    } else if (depth_ == 1 && shape.root_object && root_key_ == "deviceProperties") {
      building_ = true;
      properties_ = true;
      builder_.begin(std::move(container));
    }
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (building_) {
      if (builder_.end()) {
        building_ = false;
        if (properties_) {
          shape.device_properties = std::move(builder_.value());
          properties_ = false;
        } else {
          on_event_(builder_.value(), index_++);
        }
      }
    } else if (list_depth_ > 0 && depth_ == list_depth_ - 1) {
      list_depth_ = 0;  // the event list ends
    }
    return true;
  }

  const std::function<void(const json&, std::size_t)>& on_event_;
  Builder builder_;
  bool building_ = false, properties_ = false;
  int depth_ = 0, list_depth_ = 0;
  std::string root_key_;
  std::set<std::string> root_keys_;
  std::size_t index_ = 0;
};

}  // namespace

TraceShape read_trace_events(std::string_view text, const std::function<void(const json&, std::size_t)>& on_event) {
  EventReader reader(on_event);
  json::sax_parse(text.begin(), text.end(), &reader);
  reader.shape.events = reader.events();
  return reader.shape;
}

}  // namespace gradsync
