#include "brine/store/errors.h"

namespace brine::store {

TooNewError::TooNewError(int database_version, int binary_version)
    : FatalError("the store has schema version " + std::to_string(database_version) +
                 ", made by a newer brine; this brine knows schema versions up to " +
                 std::to_string(binary_version) + ": upgrade brine or use another database"),
      database_version_(database_version),
      binary_version_(binary_version) {}

}  // namespace brine::store
