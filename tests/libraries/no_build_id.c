/* A shared library linked without a GNU build id (tests/CMakeLists.txt builds it twice, with
 * GJ_NO_BUILD_ID_VALUE 1 and 2): the cache key's fallback identity of a compiler library that
 * has none, its file's size and first MiB (src/loader/library_identity.c). */
__attribute__((visibility("default"))) int gj_test_no_build_id_value(void);
int gj_test_no_build_id_value(void) {
    return GJ_NO_BUILD_ID_VALUE;
}
