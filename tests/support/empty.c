/* Keeps the support library non-empty before other support files exist. */
typedef int gj_test_support_empty;
