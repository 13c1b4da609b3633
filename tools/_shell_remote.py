r"""Programs that run a command elsewhere: on another machine (``ssh HOST CMD``), in a container
(``docker exec CONTAINER CMD``, ``docker run IMAGE CMD``, ``docker compose exec``) or a pod
(``kubectl exec POD -- CMD``).

Their specs (``_shell_specs.Wrapper`` with ``elsewhere``, inside runners) are used by
``_shell_runners``: what runs there is analyzed and asked for by its own name, but its paths are
not this machine's; the place counts as outside instead. Folders a container mounts from this
machine are checked (``mounts``).
"""

from __future__ import annotations

from ._shell_specs import Runner, Wrapper


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- elsewhere: a container or a pod ------------------------------------------------------------
_DOCKER = _set("-H --host -c --context -l --log-level")
_DOCKER_PATHS = _set("--config --tlscacert --tlscert --tlskey")
_CONTAINER_EXEC = Wrapper(
    _set("-e --env -u --user -w --workdir --detach-keys"), _set("--env-file"), leading=1, elsewhere=True
)
_CONTAINER_RUN = Wrapper(
    _set(
        "-a --attach --add-host --annotation --blkio-weight --blkio-weight-device --cap-add --cap-drop "
        "--cgroup-parent --cgroupns --cpu-period --cpu-quota --cpu-rt-period --cpu-rt-runtime -c "
        "--cpu-shares --cpus --cpuset-cpus --cpuset-mems --detach-keys --device --device-cgroup-rule "
        "--device-read-bps --device-read-iops --device-write-bps --device-write-iops --dns --dns-option "
        "--dns-search --domainname --entrypoint -e --env --expose --gpus --group-add --health-cmd "
        "--health-interval --health-retries --health-start-period --health-timeout -h --hostname --ip "
        "--ip6 --ipc --isolation --kernel-memory -l --label --link --link-local-ip --log-driver "
        "--log-opt --mac-address -m --memory --memory-reservation --memory-swap --memory-swappiness "
        "--name --network --net --network-alias --oom-score-adj --pid --pids-limit --platform -p "
        "--publish --pull --restart --runtime --security-opt --shm-size --stop-signal --stop-timeout "
        "--storage-opt --sysctl --tmpfs --ulimit -u --user --userns --uts --volume-driver "
        "--volumes-from -w --workdir --arch --os --variant --secret --pod --hooks-dir --uidmap --gidmap"
    ),
    _set("--env-file --label-file --cidfile --pidfile --iidfile"),
    leading=1,
    shell_options=_set("-i --interactive"),  # with no command, the image's own may read stdin
    elsewhere=True,
    mounts=_set("-v --volume --mount"),
)
COMPOSE = Runner(
    {
        "exec": Wrapper(
            _set("-e --env -u --user -w --workdir --index"),
            leading=1,
            elsewhere=True,
        ),
        "run": Wrapper(
            _set("-e --env -u --user -w --workdir -l --label --name -p --publish --entrypoint --cap-add")
            | _set("--cap-drop --pull"),
            leading=1,
            shell=True,  # with no command, the service's own reads stdin (-i is the default)
            elsewhere=True,
            mounts=_set("-v --volume"),
        ),
    },
    _set("-p --project-name --profile --ansi --progress --parallel"),
    _set("-f --file --env-file"),
    _set("--project-directory"),
)
DOCKER = Runner(
    {
        "exec": _CONTAINER_EXEC,
        "run": _CONTAINER_RUN,
        "container": Runner({"exec": _CONTAINER_EXEC, "run": _CONTAINER_RUN}),
        "compose": COMPOSE,
    },
    _DOCKER,
    _DOCKER_PATHS,
)
#: nerdctl (containerd's docker): docker's subcommands, its own global options.
NERDCTL = Runner(
    DOCKER.commands,
    _set("-a -H --address --host -n --namespace --snapshotter --storage-driver --cgroup-manager")
    | _set("--host-gateway-ip --bridge-ip"),
    _set("--data-root --cni-path --cni-netconfpath --hosts-dir"),
)
#: ctr (containerd's own client): ``ctr run IMAGE ID CMD``, ``ctr task exec --exec-id ID CTR CMD``.
CTR = Runner(
    {
        "run": Wrapper(
            _set("--env --label --runtime --snapshotter --cwd -u --user --cpus --memory-limit --cni")
            | _set("--platform --with-ns --fifo-dir --seccomp-profile --gpus --device --annotation")
            | _set("--hostname --cap-add --cap-drop --rootfs-propagation --runtime-config-path"),
            _set("--env-file --pid-file --config -c --log-uri"),
            leading=2,
            elsewhere=True,
            permute=True,
            mounts=_set("--mount"),
        ),
        **dict.fromkeys(
            _set("task tasks t"),
            Runner(
                {
                    "exec": Wrapper(
                        _set("--exec-id --cwd -u --user --fifo-dir --log-uri"),
                        leading=1,
                        elsewhere=True,
                        permute=True,
                    )
                }
            ),
        ),
    },
    _set("-a --address --timeout --connect-timeout -n --namespace"),
)
#: crictl exec [OPTIONS] CONTAINER CMD, or with a filter (``--name NAME``) and no CONTAINER.
_CRICTL_FILTERS = _set("--name --pod --label --image --state -l --last")
CRICTL = Runner(
    {
        "exec": Wrapper(
            _set("--timeout --transport") | (_CRICTL_FILTERS - _set("-l --last")),
            leading=1,
            direct=_CRICTL_FILTERS,
            elsewhere=True,
        )
    },
    _set("-r --runtime-endpoint -i --image-endpoint -t --timeout"),
    _set("-c --config"),
)
#: distrobox enter [NAME] -- CMD and toolbox run CMD: a command in a container of the user's.
#: With nothing to run, both enter a shell reading stdin.
DISTROBOX_ENTER = Wrapper(
    _set("-n --name -a --additional-flags"), until=_set("-- -e --exec"), shell=True, elsewhere=True
)
_TOOLBOX = _set("-c --container -d --distro -r --release")
TOOLBOX = Runner(
    {
        "run": Wrapper(_TOOLBOX, elsewhere=True),
        "enter": Wrapper(_TOOLBOX, leading=1, shell=True, elsewhere=True),
    },
    _set("--log-level"),
)
_KUBECTL = _set(
    "-n --namespace --context --cluster --user -s --server --token --as --as-group --as-uid "
    "--request-timeout -v --tls-server-name --username --password"
)
_KUBECTL_PATHS = _set("--kubeconfig --certificate-authority --client-certificate --client-key --cache-dir")
KUBECTL = Runner(
    {
        "exec": Wrapper(
            _KUBECTL | _set("-c --container --pod-running-timeout"),
            _KUBECTL_PATHS | _set("-f --filename"),
            leading=1,
            direct=_set("-f --filename"),  # the pod is in the file
            permute=True,
            elsewhere=True,
        ),
        # kubectl run NAME --image=IMAGE -- CMD: a new pod runs it; debug POD|node/NAME -- CMD
        "run": Wrapper(
            _KUBECTL
            | _set("--image --env --port -l --labels --overrides --restart --image-pull-policy --timeout")
            | _set("--annotations --pod-running-timeout --serviceaccount --grace-period --field-manager")
            | _set("-o --output --template --cascade --dry-run"),
            _KUBECTL_PATHS | _set("-f --filename"),
            leading=1,
            shell_options=_set("-i --stdin"),  # with no command, the image's own may read stdin
            permute=True,
            elsewhere=True,
        ),
        "debug": Wrapper(
            _KUBECTL
            | _set("--image -c --container --target --copy-to --env --profile --image-pull-policy")
            | _set("--set-image"),
            _KUBECTL_PATHS | _set("--custom -f --filename"),
            leading=1,
            permute=True,
            elsewhere=True,
        ),
        "rsh": Wrapper(  # oc rsh POD CMD
            _KUBECTL | _set("-c --container --shell --timeout"), _KUBECTL_PATHS, leading=1, elsewhere=True
        ),
    },
    _KUBECTL,
    _KUBECTL_PATHS,
)

SSH = Wrapper(
    _set("-B -b -c -D -e -I -J -L -l -m -O -o -p -Q -R -S -W -w"),
    _set("-E -F -i"),
    leading=1,
    wrapped="joined",  # ssh joins the words for the shell on the other side
    shell=True,
    again=True,
    idle=_set("-N -W -O"),
    elsewhere=True,
)
