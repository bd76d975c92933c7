/* Keeps the test-support library non-empty while it grows. */
typedef int wsrelay_test_support_unused;
