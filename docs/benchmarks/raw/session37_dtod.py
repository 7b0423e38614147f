"""Which op issues the PyTorch model step's device-to-device copy: every CPU op whose kernels
include a Memcpy DtoD, with its input shapes and Python stack."""
import torch
import gridjit.torch as gjt
from torch.profiler import profile, ProfilerActivity
HASHGRID = {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2, "log2_hashmap_size": 19,
            "base_resolution": 16, "per_level_scale": 2.0}
NET = {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None", "n_neurons": 64, "n_hidden_layers": 2}
n = 1 << 21
torch.manual_seed(0)
model = gjt.NetworkWithInputEncoding(3, 16, HASHGRID, NET).cuda()
opt = torch.optim.Adam(model.parameters(), 1e-2)
x = torch.rand(n, 3, device="cuda"); target = torch.rand(n, 16, device="cuda")
def step():
    y = model(x)
    loss = (y.float() - target).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
for _ in range(5): step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=True) as prof:
    for _ in range(3): step()
    torch.cuda.synchronize()
seen = set()
for ev in prof.events():
    ks = [k for k in getattr(ev, "kernels", []) if "Memcpy" in k.name or "Memset" in k.name]
    if not ks: continue
    chain = []; p = ev
    while p is not None:
        chain.append(p.name); p = p.cpu_parent
    key = (tuple(chain), tuple(k.name for k in ks))
    if key in seen: continue
    seen.add(key)
    print("==", " <- ".join(chain))
    print("   kernels:", [(k.name, round(k.duration, 1)) for k in ks])
    print("   shapes:", ev.input_shapes)
    print("   stack:", "\n          ".join(ev.stack[:12]))
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_device_time_total", row_limit=25))
