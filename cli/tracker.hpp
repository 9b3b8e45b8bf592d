// cli/tracker.hpp - the library's tracker (include/yolo12/tracker.hpp), or the stand-in declared in
// tracker_stub.hpp while that header is not there yet.
#pragma once

#if __has_include("yolo12/tracker.hpp")
#include "yolo12/tracker.hpp"
#else
#include "tracker_stub.hpp"
#endif
