// error.hpp: the exceptions gradsync's libraries throw; only `main` turns them into exit codes.
//
// Library code never prints and never exits. It throws one of these with a message that says
// where (file:line, field, flag), what (the bad value, quoted) and what was expected:
//
//   throw gradsync::ConfigError(fmt::format("{}:{}: edge {}: bandwidth \"{}\" must be > 0", ...));
//
// `main` prints "error: <what()>" on stderr and returns exit_code().
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace gradsync {

// bidi_control: a Unicode bidirectional formatting character (U+061C, U+200E-200F, U+202A-202E,
// U+2066-2069): invisible, it reorders the text after it on a terminal.
constexpr bool bidi_control(char32_t c) {
  return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// utf8_length: the length of the UTF-8 character at text[i] (a lead byte and its continuation
// bytes: no overlong forms, no surrogates, at most U+10FFFF), 0 when text[i] starts none.
inline std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto u = static_cast<unsigned char>(text[i]);
  if (u < 0x80) return 1;
  const std::size_t len = u >= 0xc2 && u <= 0xdf ? 2 : u >= 0xe0 && u <= 0xef ? 3 : u >= 0xf0 && u <= 0xf4 ? 4 : 0;
  bool ok = len > 0 && i + len <= text.size();
  for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
  if (ok && len >= 3) {
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    if (u == 0xe0 && b1 < 0xa0) ok = false;   // overlong
    if (u == 0xed && b1 >= 0xa0) ok = false;  // surrogates
    if (u == 0xf0 && b1 < 0x90) ok = false;   // overlong
    if (u == 0xf4 && b1 >= 0x90) ok = false;  // beyond U+10FFFF
  }
  return ok ? len : 0;
}

// utf8_code_point: the code point of the valid character of `len` bytes at text[i].
inline char32_t utf8_code_point(std::string_view text, std::size_t i, std::size_t len) {
  const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(text[i + k])); };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1f) << 6) | (b(1) & 0x3f);
    case 3:
      return ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3f) << 12) | ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
  }
}

// first_bad_utf8: the offset of the first byte of `text` that is not part of a UTF-8 character,
// or npos.
inline std::size_t first_bad_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8_length(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

// has_bidi_control: whether `text` (UTF-8) holds a bidirectional control.
inline bool has_bidi_control(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8_length(text, i);
    if (len == 0) {
      ++i;
      continue;
    }
    if (bidi_control(utf8_code_point(text, i, len))) return true;
    i += len;
  }
  return false;
}

// printable_message: `message` with its control characters written out (NUL as \x00, ESC as
// \x1b; newlines and tabs kept), each byte that is not part of a UTF-8 character as \xNN (0xff as
// \xff), and a bidirectional control as \uNNNN (U+202E turns the rest of a line around on a
// terminal), so that a bad value quoted from a file or flag neither ends the message at a NUL nor
// reaches the terminal as an escape sequence, a reordering or a byte it cannot show.
inline std::string printable_message(const std::string& message) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(message.size());
  const auto escape = [&](unsigned char u) {
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 15];
  };
  for (std::size_t i = 0; i < message.size();) {
    const auto u = static_cast<unsigned char>(message[i]);
    if (u < 0x80) {
      if ((u < 0x20 && u != '\n' && u != '\t') || u == 0x7f) {
        escape(u);
      } else {
        out += static_cast<char>(u);
      }
      ++i;
      continue;
    }
    const std::size_t len = utf8_length(message, i);
    if (len == 0) {
      escape(u);
      ++i;
      continue;
    }
    if (const char32_t cp = utf8_code_point(message, i, len); bidi_control(cp)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 15];
    } else {
      out.append(message, i, len);
    }
    i += len;
  }
  return out;
}

// Error is the base of every gradsync exception. exit_code() is the process exit status `main`
// returns for it: 1 (runtime failure) unless a child says otherwise. Its message is printable
// (printable_message).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable_message(message)) {}
  virtual int exit_code() const noexcept { return 1; }
  // every_rank: every process of an mpirun or srun finds this same error (the command line, the
  // launch or a shared file decides it), so rank 0 says it and the others end without a word, as
  // with a parse error (apps/cli.cpp). Set through on_every_rank.
  bool every_rank() const noexcept { return every_rank_; }

 private:
  template <typename E>
  friend E on_every_rank(E e);
  bool every_rank_ = false;
};

// on_every_rank: `e`, marked as found alike by every rank: throw on_every_rank(UsageError(...)).
template <typename E>
E on_every_rank(E e) {
  e.every_rank_ = true;
  return e;
}

// ConfigError: a bad input file or value (model, topology, scenario, calibration, unit text).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// DataError: a bad input file: a model, topology, scenario, calibration or published table that
// cannot be read or holds something malformed. It stays an exit-1 error even where the file was
// named by a flag, where other ConfigErrors of a flag's value become UsageErrors (exit 2).
class DataError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// UsageError: a bad command line (unknown flag, bad flag value, missing argument); exit 2.
class UsageError : public Error {
 public:
  using Error::Error;
  int exit_code() const noexcept override { return 2; }
};

// RuntimeError: a failure while running (a file that cannot be written, a simulation or a
// device that fails, a collective that times out).
class RuntimeError : public Error {
 public:
  using Error::Error;
};

// like: `to`, marked as found alike by every rank where `from` was (a message rewritten on its
// way up keeps the mark).
template <typename E>
E like(const Error& from, E to) {
  return from.every_rank() ? on_every_rank(std::move(to)) : to;
}

// same_on_every_rank runs `f`, whose errors every rank of an mpirun or srun finds alike (the
// command line, a shared scenario file): they are rethrown marked so (on_every_rank), so that
// rank 0 says them once.
template <typename F>
auto same_on_every_rank(F f) {
  try {
    return f();
  } catch (const UsageError& e) {
    throw on_every_rank(UsageError(e));
  } catch (const DataError& e) {
    throw on_every_rank(DataError(e));
  } catch (const ConfigError& e) {
    throw on_every_rank(ConfigError(e));
  }
}

// as_data_error runs `read` (a loader of `origin`'s text) and rethrows its ConfigErrors as DataError.
template <typename Read>
auto as_data_error(Read read) {
  try {
    return read();
  } catch (const DataError&) {
    throw;
  } catch (const ConfigError& e) {
    throw DataError(e.what());
  }
}

// kExitSuccess, kExitRuntime, kExitUsage: the three exit statuses of the gradsync command.
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

}  // namespace gradsync
