# brine_embed_migrations(<target> <dir>): generates a source file that holds
# every <dir>/NNNN_name.sql as a string literal, in order, and adds it to
# <target>. The build fails when the numbers have a gap or a duplicate.
# An optional third argument names the generated function (default
# EmbeddedMigrations, declared in store/src/migrations.h), for a second series.
function(brine_embed_migrations target dir)
  set(func EmbeddedMigrations)
  if(ARGC GREATER 2)
    set(func ${ARGV2})
  endif()
  file(GLOB sql_files CONFIGURE_DEPENDS ${dir}/*.sql)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${func}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -DFUNC=${func}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedMigrationsScript.cmake
    DEPENDS ${sql_files} ${PROJECT_SOURCE_DIR}/cmake/EmbedMigrationsScript.cmake
    COMMENT "Embedding migrations from ${dir}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
