// remote/xml_doc (private to src/remote): the small strict XML parser behind
// the object stores' listings (s3_xml.cc, azure_xml.cc). It knows exactly
// what such an answer may hold: elements, attributes, text with the five
// predefined entities and character references, comments, CDATA and a
// leading XML declaration. A DOCTYPE (so any entity definition), a tag that
// does not close, text outside the root, nesting deeper than 32 levels or
// more than a million elements are malformed.
//
// A pure function of untrusted text: malformed input is an EIO Status, never
// a crash; messages never quote the document. Thread-safety: none needed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct XmlElement {
  std::string name;  // without a namespace prefix
  std::string text;  // the text directly inside, entities decoded
  std::vector<std::pair<std::string, std::string>> attributes;  // decoded values
  std::vector<XmlElement> children;
  const XmlElement* Child(const char* child) const {
    for (const auto& c : children) {
      if (c.name == child) return &c;
    }
    return nullptr;
  }
  // The value of attribute `attribute` (its name without a prefix), or "".
  std::string Attribute(const char* attribute) const {
    for (const auto& [n, v] : attributes) {
      if (n == attribute) return v;
    }
    return "";
  }
};

// The document's root element.
Result<XmlElement> ParseXml(const std::string& text);

}  // namespace b2ndfs::remote
