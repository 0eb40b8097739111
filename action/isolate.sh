# shellcheck shell=bash
# Sourced first by each run step of the action (bash built-ins only: nothing runs before it), so
# that no program or module of the caller's tree (a pull request's) runs in a step that holds
# keys, even when an earlier step pointed PATH or PYTHONPATH at it.
#
# Python's own variables (PYTHONPATH, PYTHONUSERBASE, PYTHONHOME, PYTHONSTARTUP, ...) go: the
# action's interpreters run isolated (-I) and ignore them anyway; unset, they reach no Python a
# step starts either (pip's build subprocesses).
unset "${!PYTHON@}"
# PATH keeps only absolute directories outside the workspace and the current directory, links
# followed (empty and relative entries name the current directory).
fs_workspace=$(cd -P -- "${GITHUB_WORKSPACE:-.}" && pwd) || {
  echo "::error title=fleet-sync::cannot enter GITHUB_WORKSPACE"
  exit 1
}
fs_here=$(pwd -P)
fs_rest="$PATH:"
fs_kept=
while [ -n "$fs_rest" ]; do
  fs_entry=${fs_rest%%:*}
  fs_rest=${fs_rest#*:}
  case "$fs_entry" in
    /*) ;;
    *) continue ;;
  esac
  fs_real=$(cd -P -- "$fs_entry" 2>/dev/null && pwd) || continue
  case "$fs_real/" in
    "${fs_workspace%/}"/* | "${fs_here%/}"/*) continue ;;
  esac
  fs_kept=${fs_kept:+$fs_kept:}$fs_entry
done
PATH=$fs_kept
unset fs_workspace fs_here fs_rest fs_entry fs_real fs_kept
