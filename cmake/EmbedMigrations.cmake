# brine_embed_migrations(<target> <dir> [FUNCTION <name>] FILES <NNNN_name.sql>...):
# generates a source file that holds each listed <dir>/NNNN_name.sql as a
# string literal, in order, and adds it to <target>. The list is the series:
# configuring fails when a .sql file in <dir> is not listed or a listed one is
# missing (the folder is globbed with CONFIGURE_DEPENDS, so a new file re-runs
# this check), and the build fails when the numbers have a gap or a duplicate.
# FUNCTION names the generated function (default EmbeddedMigrations, declared
# in store/src/migrations.h), for a second series.
function(brine_embed_migrations target dir)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "FUNCTION" "FILES")
  set(func EmbeddedMigrations)
  if(arg_FUNCTION)
    set(func ${arg_FUNCTION})
  endif()
  file(GLOB present RELATIVE ${dir} CONFIGURE_DEPENDS ${dir}/*.sql)
  set(unlisted ${present})
  list(REMOVE_ITEM unlisted ${arg_FILES})
  if(unlisted)
    message(FATAL_ERROR "migrations in ${dir} not listed in ${CMAKE_CURRENT_LIST_FILE}: ${unlisted}")
  endif()
  set(missing ${arg_FILES})
  list(REMOVE_ITEM missing ${present})
  if(missing)
    message(FATAL_ERROR "migrations listed in ${CMAKE_CURRENT_LIST_FILE} but not in ${dir}: ${missing}")
  endif()
  set(sql_files "")
  foreach(name ${arg_FILES})
    list(APPEND sql_files ${dir}/${name})
  endforeach()
  string(REPLACE ";" "," files_arg "${arg_FILES}")
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${func}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DFILES=${files_arg} -DOUT=${out} -DFUNC=${func}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedMigrationsScript.cmake
    DEPENDS ${sql_files} ${PROJECT_SOURCE_DIR}/cmake/EmbedMigrationsScript.cmake
    COMMENT "Embedding migrations from ${dir}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
