// markup.hpp: text made safe inside HTML and XML (report.html, GraphML export).
//
//   markup_escape("a<b & 'c'") == "a&lt;b &amp; &#39;c&#39;"
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

// markup_escape: & < > " ' as character references, valid in element text and in quoted
// attributes of both HTML and XML.
inline std::string markup_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace gradsync
