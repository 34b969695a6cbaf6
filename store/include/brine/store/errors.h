// The store's failures. Every SQLite error is translated into one of these
// once, in store/src, keeping SQLite's message.
//
//   StoreError            anything else (bad path, read-only misuse, ...)
//   +- BusyError          the database stayed locked past the busy timeout: retry
//   +- WriteFailedError   a write or COMMIT failed (disk full, I/O error, page
//   |                     limit); the batch was rolled back and the Store
//   |                     refuses writes until reopened: replay the batch
//   +- FatalError         corrupt, not a brine store: the operator must act
//      +- TooNewError     made by a newer brine (names both schema versions)
#pragma once

#include <stdexcept>
#include <string>

namespace brine::store {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BusyError : public StoreError {
 public:
  using StoreError::StoreError;
};

class WriteFailedError : public StoreError {
 public:
  using StoreError::StoreError;
};

class FatalError : public StoreError {
 public:
  using StoreError::StoreError;
};

class TooNewError : public FatalError {
 public:
  TooNewError(int database_version, int binary_version);
  [[nodiscard]] int database_version() const { return database_version_; }
  [[nodiscard]] int binary_version() const { return binary_version_; }

 private:
  int database_version_;
  int binary_version_;
};

}  // namespace brine::store
