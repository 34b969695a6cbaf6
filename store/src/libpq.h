// libpq, loaded when the first PostgreSQL connection is made rather than when
// the program starts. libpq pulls in about twenty libraries (Kerberos, LDAP,
// GnuTLS, ...); loading and relocating them took 7 ms of brine-run's 10 ms
// start on every call, SQLite stores included (docs/performance.md, issue 15
// round 3). Only postgres_connection.cpp and conninfo.cpp call libpq, through Libpq().
#pragma once

#include <libpq-fe.h>

namespace brine::store::detail {

// Every libpq function the store calls.
#define BRINE_LIBPQ_FUNCTIONS(X)                                                                               \
  X(PQcancel) X(PQclear) X(PQcmdTuples) X(PQconnectdb) X(PQconninfoFree) X(PQconninfoParse) X(PQdb)              \
  X(PQenterPipelineMode) X(PQerrorMessage) X(PQexec) X(PQexecParams) X(PQexitPipelineMode) X(PQfinish) X(PQfname)   \
  X(PQfreeCancel) X(PQfreemem) X(PQftype) X(PQgetCancel) X(PQgetResult) X(PQgetisnull) X(PQgetlength) X(PQgetvalue) \
  X(PQhost) X(PQnfields) X(PQntuples) X(PQpipelineSync) X(PQresultErrorField) X(PQresultErrorMessage)              \
  X(PQresultStatus)                                                                                                \
  X(PQsendPrepare) X(PQsendQueryParams) X(PQsendQueryPrepared) X(PQsetNoticeProcessor) X(PQsetSingleRowMode) X(PQstatus) X(PQtransactionStatus)

// Pointers to those functions, named as libpq names them.
struct LibpqApi {
#define BRINE_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
  BRINE_LIBPQ_FUNCTIONS(BRINE_LIBPQ_MEMBER)
#undef BRINE_LIBPQ_MEMBER
};

// libpq's functions, loaded from libpq.so.5 on the first call (thread-safe;
// the library stays loaded). Throws StoreError naming what is missing when
// libpq or one of its functions cannot be loaded; later calls retry.
[[nodiscard]] const LibpqApi& Libpq();

}  // namespace brine::store::detail
