// Microbenchmark (2026-11-29a call 3, run as .device/micro/graph.cu): what a pass's CUDA graph
// costs outside its kernels on this machine. Two spin kernels shaped like the official 1024's
// launches (528 x 128 for ~37 us, then 132 x 512 for ~26 us), timed with events around one
// graph launch, as spdnn's harness times a pass: with and without a 256-byte memset node
// first, with the second kernel a programmatic dependent launch (PDL) or not, and with the GPU
// kept busy before the start event (so the host's submission is hidden) or not.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
__global__ void spin(unsigned long long ns, int pdl_wait, int pdl_trigger, int* sink) {
    if (pdl_wait) asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned long long t0 = now_ns();
    while (now_ns() - t0 < ns) {}
    if (pdl_trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (threadIdx.x == 0 && ns == 1) sink[blockIdx.x] = 1;
}
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int* counters; CK(cudaMalloc(&counters, 256));
    int* sink; CK(cudaMalloc(&sink, 4096));
    float* hold; size_t hold_bytes = 256ull << 20; CK(cudaMalloc(&hold, hold_bytes));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    struct Case { const char* name; int memset; int pdl; int trigger; };
    Case cases[] = {{"memset+k1+k2", 1, 0, 0}, {"k1+k2", 0, 0, 0}, {"memset+k1+k2(pdl)", 1, 1, 0},
                    {"memset+k1(trigger)+k2(pdl)", 1, 1, 1}, {"k1(trigger)+k2(pdl)", 0, 1, 1}};
    for (int held = 0; held < 2; ++held) {
        for (auto& c : cases) {
            cudaGraph_t g; cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            if (c.memset) CK(cudaMemsetAsync(counters, 0, 256, s));
            spin<<<528, 128, 0, s>>>(37000, 0, c.trigger, sink);
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(132); cfg.blockDim = dim3(512); cfg.stream = s;
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = attr; cfg.numAttrs = c.pdl ? 1 : 0;
            CK(cudaLaunchKernelEx(&cfg, spin, 26000ull, c.pdl, 0, sink));
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphUpload(ge, s));
            std::vector<float> ms;
            for (int i = 0; i < 60; ++i) {
                if (held) CK(cudaMemsetAsync(hold, 0, hold_bytes, s));  // ~80 us of work before the start event
                CK(cudaEventRecord(a, s));
                CK(cudaGraphLaunch(ge, s));
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float t; CK(cudaEventElapsedTime(&t, a, b));
                if (i >= 10) ms.push_back(t * 1000.0f);
            }
            std::sort(ms.begin(), ms.end());
            printf("%-28s held=%d  median %.1f us  (p10 %.1f, p90 %.1f; kernels spin 63.0)\n", c.name, held,
                   ms[ms.size() / 2], ms[ms.size() / 10], ms[ms.size() * 9 / 10]);
            CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
        }
    }
    return 0;
}
