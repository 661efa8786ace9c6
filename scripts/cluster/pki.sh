# Certificates and kubeconfigs of the local cluster (sourced by local-cluster.sh).
# One CA signs everything: the API server's serving certificate (its address on the nodes'
# bridge, 127.0.0.1 and the in-cluster names), one client certificate per identity, with the
# user and group names that the API server's RBAC and Node authorizers expect, and each
# kubelet's serving certificate for its node's address.
#
# Reads: PKI, SERVICE_IP (local-cluster.sh), APISERVER_HOST, NODE_NAMES (nodes.sh), APISERVER_PORT
# (picked by up).

# make_client_cert NAME CN [O]: $PKI/NAME.{key,crt}, signed by the cluster CA.
make_client_cert() {
  local name="$1" cn="$2" org="${3:-}"
  local subject="/CN=$cn"
  [[ -n "$org" ]] && subject="/O=$org$subject"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subject" \
    -out "$PKI/$name.csr" 2> /dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n') \
    -out "$PKI/$name.crt" 2> /dev/null
  rm -f "$PKI/$name.csr"
}

make_pki() {
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl req -x509 -new -newkey rsa:2048 -nodes -days 365 -subj "/CN=torus-local-cluster-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2> /dev/null
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/apiserver.key" -subj "/CN=kube-apiserver" \
    -out "$PKI/apiserver.csr" 2> /dev/null
  openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -out "$PKI/apiserver.crt" -extfile <(
      printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n' "$APISERVER_HOST" "$SERVICE_IP"
      printf 'extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n'
    ) 2> /dev/null
  rm -f "$PKI/apiserver.csr"
  # Service-account tokens are signed with this key and verified with its public half.
  openssl genrsa -out "$PKI/sa.key" 2048 2> /dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2> /dev/null
  make_client_cert admin kubernetes-admin system:masters
  make_client_cert controller-manager system:kube-controller-manager
  make_client_cert scheduler system:kube-scheduler
  make_client_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  local index
  for ((index = 1; index <= ${#NODE_NAMES[@]}; index++)); do
    make_node_certs "${NODE_NAMES[$index - 1]}" "$(node_ip "$index")"
  done
}

# make_node_certs NAME IP: the kubelet's client identity (system:node:NAME, what the Node
# authorizer expects) and its serving certificate for the node's address.
make_node_certs() {
  local name="$1" ip="$2"
  make_client_cert "kubelet-$name" "system:node:$name" system:nodes
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/kubelet-serving-$name.key" \
    -subj "/O=system:nodes/CN=system:node:$name" -out "$PKI/kubelet-serving-$name.csr" 2> /dev/null
  openssl x509 -req -in "$PKI/kubelet-serving-$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 365 -out "$PKI/kubelet-serving-$name.crt" -extfile <(
      printf 'subjectAltName=IP:%s,DNS:%s\nextendedKeyUsage=serverAuth\n' "$ip" "$name"
    ) 2> /dev/null
  rm -f "$PKI/kubelet-serving-$name.csr"
}

# write_kubeconfig FILE CERT_NAME: a kubeconfig for the API server on the nodes' bridge.
write_kubeconfig() {
  local file="$1" name="$2"
  cat > "$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: torus-local
    cluster:
      server: https://$APISERVER_HOST:$APISERVER_PORT
      certificate-authority: $PKI/ca.crt
users:
  - name: $name
    user:
      client-certificate: $PKI/$name.crt
      client-key: $PKI/$name.key
contexts:
  - name: torus-local
    context: {cluster: torus-local, user: $name}
current-context: torus-local
KUBECONFIG
  chmod 600 "$file"
}
