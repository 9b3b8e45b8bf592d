// tests/catch.hpp - Catch2 v2 (Debian 12) and v3 (the GPU machine) behind one include.
// Use only macros common to both (TEST_CASE, SECTION, REQUIRE, CHECK, INFO, CAPTURE, FAIL, WARN,
// REQUIRE_THROWS_AS, REQUIRE_THROWS_WITH, GENERATE ...) and no Approx: compare with explicit bounds.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define YOLO12_CATCH_V3 1
#else
#include <catch2/catch.hpp>
#endif
