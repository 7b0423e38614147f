"""The PyTorch model step of tcnn_workloads.py's model workload (C1 + 64 x 2 -> 16, torch Adam),
profiled: every CUDA kernel's total time over 20 steps, and the CUDA-event step time."""
import statistics, sys
import torch
import gridjit.torch as gjt
from torch.profiler import profile, ProfilerActivity

HASHGRID = {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2, "log2_hashmap_size": 19,
            "base_resolution": 16, "per_level_scale": 2.0}
NET = {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None", "n_neurons": 64, "n_hidden_layers": 2}
for log2 in (21, 18):
    n = 1 << log2
    torch.manual_seed(0)
    model = gjt.NetworkWithInputEncoding(3, 16, HASHGRID, NET).cuda()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    x = torch.rand(n, 3, device="cuda"); target = torch.rand(n, 16, device="cuda")
    def step():
        y = model(x)
        loss = (y.float() - target).square().mean()
        opt.zero_grad(); loss.backward(); opt.step()
    for _ in range(20): step()
    torch.cuda.synchronize()
    times = []
    for _ in range(30):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); step(); e.record(); e.synchronize(); times.append(s.elapsed_time(e))
    print(f"== 2^{log2}: step median {statistics.median(times):.4f} ms (30 synchronised steps); output {model(x[:4]).dtype}")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20): step()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t > 0 and ev.count:
            rows.append((t / 20, ev.count / 20, ev.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"kernels and copies a step: {total/1000:.4f} ms")
    for t, c, k in rows[:30]:
        print(f"{t/1000:9.4f} ms  x{c:4.1f}  {k[:110]}")
    del model, opt, x, target
    torch.cuda.empty_cache()
