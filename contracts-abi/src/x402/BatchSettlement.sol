// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

// The x402 `batch-settlement` channel (EVM binding), written to the ABI and EIP-712 types that the npm package @x402/evm 2.27
// ships (batchSettlementABI; domain {name "x402 Batch Settlement", version "1"}). A payer deposits into a
// channel once; each paid request is a cumulative voucher (Voucher(channelId, maxClaimableAmount)) signed by
// the payer's authorizer; the receiver's authorizer redeems vouchers in batches (claim), and anyone pays the
// receiver what was claimed (settle).
//
// Accounting, as the package reads it: a channel's `balance` is what was deposited minus what went back to
// the payer (refunds, withdrawals); `totalClaimed` only grows and never exceeds `balance`; what is free for
// the payer is `balance - totalClaimed`. Claimed funds stay in the channel's balance and are owed to the
// receiver (`receivers[receiver][token].totalClaimed - totalSettled`) until settled. So this contract holds,
// per token, Σ(balance - totalClaimed) over channels + Σ(totalClaimed - totalSettled) over receivers.
//
// Placed with anvil_setCode at its canonical address: no constructor runs, nothing is immutable, the EIP-712
// domain separator is computed from block.chainid and address(this) at call time, and the reentrancy flag
// reads 0 as "not entered".

struct ChannelConfig {
    address payer;
    address payerAuthorizer;
    address receiver;
    address receiverAuthorizer;
    address token;
    uint40 withdrawDelay;
    bytes32 salt;
}

struct Voucher {
    ChannelConfig channel;
    uint128 maxClaimableAmount;
}

struct VoucherClaim {
    Voucher voucher;
    bytes signature;
    uint128 totalClaimed;
}

/// A deposit collector pulls `amount` of `token` from `payer` with the payer's off-chain authorization
/// (`collectorData`) and moves it to the batch settlement contract, its only caller.
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData) external;
}

interface IERC1271 {
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4);
}

// canonical addresses (npm package x402 evm: BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS)
address constant BATCH_SETTLEMENT_ADDRESS = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;
address constant ERC3009_DEPOSIT_COLLECTOR_ADDRESS = 0x4020806089470a89826cB9fB1f4059150b550004;

/// ECDSA recovery of a 65-byte signature (r, s, v) by OpenZeppelin's ECDSA rule: v 27 or 28 (0 and 1 are refused,
/// as Base's contract and USDC refuse them), s in the lower half; any other signature recovers to address(0). A contract signer is asked with ERC-1271.
library SignatureCheck {
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    function split(bytes memory signature) internal pure returns (uint8 v, bytes32 r, bytes32 s, bool ok) {
        if (signature.length != 65) return (0, 0, 0, false);
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        ok = (v == 27 || v == 28) && uint256(s) <= HALF_ORDER;
    }

    function recover(bytes32 digest, bytes memory signature) internal pure returns (address) {
        (uint8 v, bytes32 r, bytes32 s, bool ok) = split(signature);
        if (!ok) return address(0);
        return ecrecover(digest, v, r, s);
    }

    /// `signer` signed `digest`: by ECDSA when it has no code, else by ERC-1271
    function isValid(address signer, bytes32 digest, bytes memory signature) internal view returns (bool) {
        if (signer == address(0)) return false;
        if (signer.code.length == 0) return recover(digest, signature) == signer;
        (bool success, bytes memory ret) = signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
        return success && ret.length >= 32 && abi.decode(ret, (bytes4)) == IERC1271.isValidSignature.selector;
    }
}

contract BatchSettlement {
    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    mapping(bytes32 channelId => ChannelState) public channels;
    mapping(bytes32 channelId => PendingWithdrawal) public pendingWithdrawals;
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;
    mapping(bytes32 channelId => uint256) public refundNonce;
    /// 0 or 1: not entered, 2: entered (0 is what anvil_setCode leaves)
    uint256 private _entered;

    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH = keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");

    event Deposited(bytes32 indexed channelId, address indexed payer, address indexed token, uint128 amount);
    event Claimed(bytes32 indexed channelId, address indexed receiver, address indexed token, uint128 amount, uint128 totalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 readyAt);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed payer, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed payer, uint128 amount);

    error Reentrancy();
    error ZeroAmount();
    error ZeroAddress();
    error UnknownCollector(address collector);
    error WithdrawDelayOutOfRange(uint40 withdrawDelay);
    error DepositShortfall(uint256 expected, uint256 received);
    error NoClaims();
    error NotReceiverAuthorizer();
    error NotPayer();
    error InvalidVoucherSignature();
    error InvalidClaimSignature();
    error InvalidRefundSignature();
    error ClaimExceedsVoucher(uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimExceedsBalance(uint128 totalClaimed, uint128 balance);
    error ChannelNotFound();
    error NoPendingWithdrawal();
    error WithdrawalAlreadyPending();
    error WithdrawExceedsUnclaimed(uint128 amount, uint128 unclaimed);
    error WithdrawNotReady(uint256 readyAt);
    error InvalidRefundNonce(uint256 expected, uint256 given);
    error NothingToRefund();
    error TokenCallFailed(address token);

    modifier nonReentrant() {
        if (_entered == 2) revert Reentrancy();
        _entered = 2;
        _;
        _entered = 1;
    }

    // ---------------------------------------------------------------- EIP-712

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    function _hashTyped(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    /// the channel id: the EIP-712 hash of the channel's config under this contract's domain
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTyped(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTyped(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTyped(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i; i < voucherClaims.length; ++i) {
            VoucherClaim calldata c = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(CLAIM_ENTRY_TYPEHASH, getChannelId(c.voucher.channel), c.voucher.maxClaimableAmount, c.totalClaimed)
            );
        }
        return _hashTyped(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // ---------------------------------------------------------------- deposit

    /// Fund a channel through the known collector, which pulls the payer's tokens with the payer's authorization
    /// (bound to this channel) and hands them here; the credit is checked against this contract's balance delta.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (amount == 0) revert ZeroAmount();
        if (collector != ERC3009_DEPOSIT_COLLECTOR_ADDRESS) revert UnknownCollector(collector);
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange(config.withdrawDelay);
        }
        if (config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)) {
            revert ZeroAddress();
        }
        if (config.token.code.length == 0) revert TokenCallFailed(config.token);
        bytes32 channelId = getChannelId(config);
        uint256 before = _balanceOfThis(config.token);
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        uint256 afterwards = _balanceOfThis(config.token);
        uint256 received = afterwards > before ? afterwards - before : 0;
        if (received < amount) revert DepositShortfall(amount, received);
        channels[channelId].balance += amount;
        emit Deposited(channelId, config.payer, config.token, amount);
    }

    // ---------------------------------------------------------------- claim and settle

    /// Redeem vouchers, called by each channel's receiver authorizer or its receiver (as the official contract).
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert NoClaims();
        for (uint256 i; i < voucherClaims.length; ++i) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (msg.sender != config.receiverAuthorizer && msg.sender != config.receiver) revert NotReceiverAuthorizer();
            _claim(voucherClaims[i]);
        }
    }

    /// Redeem vouchers, sent by anyone with the receiver authorizer's ClaimBatch signature over exactly these
    /// claims. A replay changes nothing: a claim only ever raises a channel's totalClaimed to its own value.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature) external nonReentrant {
        if (voucherClaims.length == 0) revert NoClaims();
        bytes32 digest = getClaimBatchDigest(voucherClaims);
        address checked;
        for (uint256 i; i < voucherClaims.length; ++i) {
            address authorizer = voucherClaims[i].voucher.channel.receiverAuthorizer;
            if (authorizer != checked) {
                if (!SignatureCheck.isValid(authorizer, digest, authorizerSignature)) revert InvalidClaimSignature();
                checked = authorizer;
            }
            _claim(voucherClaims[i]);
        }
    }

    /// Raise the channel's totalClaimed to the claim's (a claim at or below it is stale and changes nothing),
    /// within the payer's voucher and the channel's balance, and owe the difference to the receiver.
    function _claim(VoucherClaim calldata c) private {
        ChannelConfig calldata config = c.voucher.channel;
        bytes32 channelId = getChannelId(config);
        bytes32 digest = getVoucherDigest(channelId, c.voucher.maxClaimableAmount);
        bool signed = config.payerAuthorizer != address(0)
            ? SignatureCheck.recover(digest, c.signature) == config.payerAuthorizer
            : SignatureCheck.isValid(config.payer, digest, c.signature);
        if (!signed) revert InvalidVoucherSignature();
        if (c.totalClaimed > c.voucher.maxClaimableAmount) revert ClaimExceedsVoucher(c.totalClaimed, c.voucher.maxClaimableAmount);
        ChannelState storage channel = channels[channelId];
        if (c.totalClaimed > channel.balance) revert ClaimExceedsBalance(c.totalClaimed, channel.balance);
        uint128 previous = channel.totalClaimed;
        if (c.totalClaimed <= previous) return;
        uint128 amount = c.totalClaimed - previous;
        channel.totalClaimed = c.totalClaimed;
        receivers[config.receiver][config.token].totalClaimed += amount;
        emit Claimed(channelId, config.receiver, config.token, amount, c.totalClaimed);
    }

    /// Pay a receiver everything claimed for it in `token` and not yet paid. Anyone may call; with nothing owed it
    /// does nothing (no revert, no event), as the official contract.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage r = receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        if (amount == 0) return;
        r.totalSettled = r.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---------------------------------------------------------------- payer's exit

    /// Announce a withdrawal; it can be finalized withdrawDelay seconds later (a new one restarts the clock).
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _onlyPayer(config);
        if (amount == 0) revert ZeroAmount();
        bytes32 channelId = getChannelId(config);
        ChannelState storage channel = channels[channelId];
        if (channel.balance == 0) revert ChannelNotFound();
        // as the official contract: one announcement at a time (no restarting the clock), of at most what is unclaimed now
        if (pendingWithdrawals[channelId].initiatedAt != 0) revert WithdrawalAlreadyPending();
        uint128 free = channel.balance - channel.totalClaimed;
        if (amount > free) revert WithdrawExceedsUnclaimed(amount, free);
        pendingWithdrawals[channelId] = PendingWithdrawal(amount, uint40(block.timestamp));
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// After the delay, pay the payer the announced amount, at most what is not claimed.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _onlyPayer(config);
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal memory pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert NoPendingWithdrawal();
        uint256 readyAt = uint256(pending.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < readyAt) revert WithdrawNotReady(readyAt);
        delete pendingWithdrawals[channelId];
        ChannelState storage channel = channels[channelId];
        uint128 free = channel.balance - channel.totalClaimed;
        uint128 paid = pending.amount < free ? pending.amount : free;
        channel.balance -= paid;
        if (paid > 0) _transfer(config.token, config.payer, paid);
        emit WithdrawFinalized(channelId, config.payer, paid);
    }

    /// Cooperative refund by the receiver authorizer itself.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiverAuthorizer) revert NotReceiverAuthorizer();
        _refund(getChannelId(config), config, amount);
    }

    /// Cooperative refund sent by anyone with the receiver authorizer's Refund signature for the channel's current
    /// refund nonce (used once: the nonce moves on).
    function refundWithSignature(ChannelConfig calldata config, uint128 amount, uint256 nonce, bytes calldata receiverAuthorizerSignature)
        external
        nonReentrant
    {
        bytes32 channelId = getChannelId(config);
        uint256 expected = refundNonce[channelId];
        if (nonce != expected) revert InvalidRefundNonce(expected, nonce);
        if (!SignatureCheck.isValid(config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature)) {
            revert InvalidRefundSignature();
        }
        _refund(channelId, config, amount);
    }

    /// Return `amount` to the payer, at most what is not claimed; a refund that leaves nothing free also ends a
    /// pending withdrawal (there is nothing left for it). Every refund, direct or signed, moves the refund nonce on,
    /// so a Refund signature given out before any refund can no longer be used.
    function _refund(bytes32 channelId, ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroAmount();
        refundNonce[channelId] += 1;
        ChannelState storage channel = channels[channelId];
        uint128 free = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < free ? amount : free;
        if (refunded == 0) revert NothingToRefund();
        channel.balance -= refunded;
        if (channel.balance == channel.totalClaimed) delete pendingWithdrawals[channelId];
        _transfer(config.token, config.payer, refunded);
        emit Refunded(channelId, config.payer, refunded);
    }

    // ---------------------------------------------------------------- batching

    /// Run several of this contract's calls in one transaction (same sender); any failure reverts all.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i; i < data.length; ++i) {
            (bool ok, bytes memory ret) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly {
                    revert(add(ret, 32), mload(ret))
                }
            }
            results[i] = ret;
        }
    }

    // ---------------------------------------------------------------- helpers

    function _onlyPayer(ChannelConfig calldata config) private view {
        if (msg.sender != config.payer && (config.payerAuthorizer == address(0) || msg.sender != config.payerAuthorizer)) {
            revert NotPayer();
        }
    }

    function _balanceOfThis(address token) private view returns (uint256) {
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSignature("balanceOf(address)", address(this)));
        if (!ok || ret.length < 32) revert TokenCallFailed(token);
        return abi.decode(ret, (uint256));
    }

    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSignature("transfer(address,uint256)", to, amount));
        if (!ok || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) revert TokenCallFailed(token);
    }
}
