// tests/unit/yolo12n_layers.hpp - the layers of YOLO12n, and the model header around a layer list, for the graph
// tests (test_graph, test_fuse_chains).
#pragma once

#include <nlohmann/json.hpp>

namespace yolo12::test {

// A model header as exporter/export.py writes it (80 classes, strides 8/16/32) around the layers in layers_json.
inline nlohmann::json model_header(const char* layers_json) {
  nlohmann::json h;
  h["format"] = "yolo12-model";
  h["nc"] = 80;
  h["reg_max"] = 16;
  h["strides"] = {8, 16, 32};
  h["layers"] = nlohmann::json::parse(layers_json);
  return h;
}

// The layers exporter/export.py writes for Ultralytics yolo12n (yolo12.yaml, scale n).
inline const char* const kYolo12n = R"([
{"index":0,"type":"Conv","from":[-1],"c1":3,"c2":16,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":1,"type":"Conv","from":[0],"c1":16,"c2":32,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":2,"type":"C3k2","from":[1],"c1":32,"c2":64,"n":1,"c3k":false,"e":0.25,"g":1,"shortcut":true},
{"index":3,"type":"Conv","from":[2],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":4,"type":"C3k2","from":[3],"c1":64,"c2":128,"n":1,"c3k":false,"e":0.25,"g":1,"shortcut":true},
{"index":5,"type":"Conv","from":[4],"c1":128,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":6,"type":"A2C2f","from":[5],"c1":128,"c2":128,"n":2,"a2":true,"area":4,"residual":false,"mlp_ratio":2.0,"e":0.5,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":7,"type":"Conv","from":[6],"c1":128,"c2":256,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":8,"type":"A2C2f","from":[7],"c1":256,"c2":256,"n":2,"a2":true,"area":1,"residual":false,"mlp_ratio":2.0,"e":0.5,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":9,"type":"Upsample","from":[8],"scale":2,"mode":"nearest"},
{"index":10,"type":"Concat","from":[9,6],"dim":1},
{"index":11,"type":"A2C2f","from":[10],"c1":384,"c2":128,"n":1,"a2":false,"area":-1,"residual":false,"mlp_ratio":2.0,"e":0.5,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":12,"type":"Upsample","from":[11],"scale":2,"mode":"nearest"},
{"index":13,"type":"Concat","from":[12,4],"dim":1},
{"index":14,"type":"A2C2f","from":[13],"c1":256,"c2":64,"n":1,"a2":false,"area":1,"residual":false,"mlp_ratio":2.0,"e":0.5,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":15,"type":"Conv","from":[14],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":16,"type":"Concat","from":[15,11],"dim":1},
{"index":17,"type":"A2C2f","from":[16],"c1":192,"c2":128,"n":1,"a2":false,"area":1,"residual":false,"mlp_ratio":2.0,"e":0.5,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":18,"type":"Conv","from":[17],"c1":128,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":19,"type":"Concat","from":[18,8],"dim":1},
{"index":20,"type":"C3k2","from":[19],"c1":384,"c2":256,"n":1,"c3k":true,"e":0.5,"g":1,"shortcut":true},
{"index":21,"type":"Detect","from":[14,17,20],"nc":80,"reg_max":16,"ch":[64,128,256],"legacy":false,"c2":64,"c3":80}
])";

}  // namespace yolo12::test
